package redact

import (
	"bytes"
	"slices"
	"strings"

	"github.com/toolcanon/toolcanon/canonical"
)

// Key-value assignments: key=value, key: value, "key": "value", key => value.

type kvClass uint8

const (
	kvNone kvClass = iota
	kvSecret
	kvAuth   // Authorization: keep the scheme, drop the credentials
	kvCookie // Cookie: the whole header value
	kvUser
	kvPID
	kvHost
	kvPod
	kvContainer
	kvAccount
	kvProject // a cloud project: an account when its value is shaped like a project id
	kvPhone   // a phone number, in any of its forms
	kvLock    // a lock, or what opens one: its value is a code when shaped as one (lockCodeEnd)
)

// A key is classified by its words: split on '_', '-', '.', spaces and
// camel case, lower-cased. Whole words count, never parts of one: a key
// holding "admin" is not a setting for holding "min".

// exactKeys name a value by the whole key: identities, and the short
// names of credentials that are words of other things inside longer keys.
var exactKeys = map[string]kvClass{
	"sig": kvSecret, "sid": kvSecret, "key": kvSecret, "jsessionid": kvSecret, "phpsessid": kvSecret,
	"authorization": kvAuth, "proxy-authorization": kvAuth, "www-authenticate": kvAuth,
	"cookie": kvCookie, "set-cookie": kvCookie,
	"user": kvUser, "username": kvUser, "user_name": kvUser, "user-name": kvUser, "login": kvUser,
	"uid": kvUser, "userid": kvUser, "user_id": kvUser, "owner": kvUser, "principal": kvUser,
	"ruser": kvUser, "logname": kvUser, "account": kvUser, "acct": kvUser, "usr": kvUser,
	"user id": kvUser, "suser": kvUser, "duser": kvUser, "email": kvUser,
	"pid": kvPID, "ppid": kvPID, "tid": kvPID, "thread_id": kvPID, "threadid": kvPID,
	"process_id": kvPID, "processid": kvPID, "pgid": kvPID, "lwp": kvPID,
	"host": kvHost, "hostname": kvHost, "host_name": kvHost, "server": kvHost, "node": kvHost,
	"node_name": kvHost, "nodename": kvHost, "instance": kvHost, "rhost": kvHost, "shost": kvHost,
	"dhost": kvHost, "data source": kvHost, "machine": kvHost, "computer": kvHost,
	"pod": kvPod, "pod_name": kvPod, "podname": kvPod, "k8s.pod.name": kvPod,
	"container": kvContainer, "container_id": kvContainer, "containerid": kvContainer,
	"account_id": kvAccount, "accountid": kvAccount, "aws_account_id": kvAccount, "subscription_id": kvAccount,
	"tenant_id": kvAccount, "project_id": kvAccount, "tenant": kvAccount, "tenant-id": kvAccount,
	"subscription-id": kvAccount, "account-id": kvAccount,
	"subscriptionid": kvAccount, "tenantid": kvAccount, "projectid": kvAccount, "project-id": kvAccount,
	"directory_id": kvAccount, "directoryid": kvAccount, "azure_subscription_id": kvAccount, "azure_tenant_id": kvAccount,
	"arm_subscription_id": kvAccount, "arm_tenant_id": kvAccount, "gcp_project": kvProject, "google_cloud_project": kvProject,
	"gcloud_project": kvProject, "project": kvProject, "cloudsdk_core_project": kvProject, "aws_account": kvAccount,
}

// credentialWords are the words that make a key name a credential
// wherever they stand in it (db_password, x-auth-token, clientSecret,
// kennwort_nas, mot_de_passe), in the languages keys are written in.
var credentialWords = wordSet(`password passwd pwd pw pass passphrase passcode secret token credential credentials
	cookie cookies signature csrf xsrf apikey auth session sessionid pin otp nonce salt mnemonic community
	requirepass masterauth masterpassword bindpw rootpw storepass keypass srcstorepass deststorepass keystorepass
	authtoken accesstoken refreshtoken idtoken sessiontoken accesskey secretkey privatekey clientsecret psk
	connectionstring authkey accountkey masterkey authident sharedkey
	kennwort passwort passe contrasena contraseña contrasenya clave senha wachtwoord losenord lösenord salasana
	haslo hasło heslo jelszo jelszó passord adgangskode sifre şifre parol пароль 密码 パスワード 비밀번호`)

// qualifiedNouns name a credential after one of their qualifiers,
// anywhere before them in the key: api_key, AccountKey, local_key,
// connection_string, security_answer, recoveryPhrase, seed_words,
// alarm_code, safe_dial.combination, unlock_word. Alone, "key" names one
// too, the others do not.
var qualifiedNouns = func() map[string]map[string]bool {
	key := wordSet(`api access secret private client account master encryption decryption signing sas auth
		license app consumer storage shared hmac webhook integration local device authentication network psk security
		pairing activation product registration unlock wifi wireless wpa enrolment enrollment recovery`)
	code := wordSet(`otp mfa 2fa sms login`) // and any word secretCode allows
	phrase := wordSet(`seed recovery backup mnemonic secret pass`)
	answer := wordSet(`security secret question questions verification challenge memorable`)
	lock := wordSet(`safe dial lock padlock vault door gate locker keypad cabinet cupboard drawer shed lockbox`)
	word := wordSet(`unlock secret code magic safe login access pass memorable security duress`)
	// An override's code is named by whose authority it carries.
	override := wordSet(`manager master supervisor admin administrator security emergency engineer`)
	return map[string]map[string]bool{"key": key, "keys": key, "string": wordSet("connection"),
		"combination": lock, "combo": lock, "word": word, "phrase": phrase,
		"code": code, "codes": code, "words": phrase, "answer": answer, "answers": answer, "response": answer,
		"override": override}
}()

// qualified reports whether the n-th word of the lower-case key k (words
// as keyWords finds them) is a qualified noun after one of its qualifiers.
func qualified(k []byte, words [][2]int, n int) bool {
	noun := string(k[words[n][0]:words[n][1]])
	if noun == "key" && n >= 2 && n == len(words)-1 && string(k[words[0][0]:words[0][1]]) == "x" &&
		!indexKeys[string(k[words[n-1][0]:words[n-1][1]])] {
		return true // x-plotwarden-key: the key a custom header carries
	}
	quals := qualifiedNouns[noun]
	for m := 0; m < n && quals != nil; m++ {
		if q := string(k[words[m][0]:words[m][1]]); quals[q] || (noun == "code" || noun == "codes") && secretCode(q) {
			return true
		}
	}
	return false
}

// indexKeys name a key that finds or orders data rather than opens it
// (x-cache-key, x-idempotency-key, x-partition-key).
var indexKeys = wordSet(`cache sort partition primary foreign idempotency routing dedup dedupe object row shard hash lookup
	map public index bucket message group order range composite unique natural surrogate`)

// secretCode reports whether the word q before "code" makes the code a
// secret: any noun but one of settings or of public codes (error, status,
// country, tracking), and no word of grammar (with code 1001): door code,
// gate_code, emergency_code, menu code.
func secretCode(q string) bool {
	return len(q) > 2 && allLetters([]byte(q)) && !publicCodes[q] && !grammarWords[q] && !settingWords[q]
}

// settingWords are the words that make a key name a property of a
// credential, or where it comes from, rather than the credential itself,
// when they follow its word: password_file, token_url, secret_name,
// auth_type, auth_server.
var settingWords = wordSet(`count len length size ttl timeout expiry expires expire expiration expired max min limit
	type ms enabled enable disabled required version interval file path env stdin prompt cmd command helper mode method
	url uri endpoint algorithm alg name ref provider policy strength rotation format dir less hash bits header field
	scheme alphabet charset chars characters digits
	param store kind source label hint rule rules valid validity age function func handler mechanism mechanisms
	backend class module plugin server impl column num protocol protocols`)

// interfaceWords name a part or a state of the interface that shows or
// asks for a credential (secretMenuVisible, token_button, passwordIcon):
// after the credential word they make the key name that thing, as a
// setting word does.
var interfaceWords = wordSet(`menu menus button buttons btn icon visible visibility shown hidden screen dialog modal
	popup panel tab tooltip banner widget toggle checkbox dropdown spinner overlay drawer sidebar toolbar meter indicator`)

// keeperWords name what keeps or makes a credential (secret_manager,
// password_manager, token_vendor): after the credential word they make
// the key name that program, as a setting word does. A code's noun
// (manager code 84033) they do not make a setting.
var keeperWords = wordSet(`manager managers engine driver vendor`)

// boundWords are the setting words that make a setting wherever they
// stand: they count or bound what follows them (max_tokens, min_password).
var boundWords = wordSet(`count len length size max min limit num`)

// boundGlued reports whether w is a bound glued to the setting it bounds
// (minlength, maxlen, maxage).
func boundGlued(w []byte) bool {
	for _, b := range []string{"min", "max"} {
		if len(w) > len(b) && bytes.HasPrefix(w, []byte(b)) && settingWords[string(w[len(b):])] {
			return true
		}
	}
	return false
}

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// wordFilter rules out most of the words that a set of words (a map keyed
// by them) does not hold, by their length, first and last byte, at the cost
// of a table load: a word it lets through is looked up in the map. A pass
// that looks each word of a text up in several sets asks the filters
// first, and the maps for few words.
type wordFilter [4]uint64

// The filters of the word sets that the passes look most words up in.
var (
	qualifiedFilter, englishFilter, credentialFilter = filterOf(qualifiedNouns), filterOf(englishWords), filterOf(credentialWords)
	zoneFilter, tldFilter                            = filterOf(internalZones), filterOf(hostTLDs)
)

// filterOf returns the filter of the keys of m. m must not change after.
func filterOf[V any](m map[string]V) *wordFilter {
	f := new(wordFilter)
	for w := range m {
		if w != "" {
			i, b := f.bit([]byte(w))
			f[i] |= b
		}
	}
	return f
}

func (*wordFilter) bit(w []byte) (int, uint64) {
	k := (uint(len(w))*131 + uint(w[0])*7 + uint(w[len(w)-1])) & 255
	return int(k >> 6), 1 << (k & 63)
}

// mayFold reports whether the set, of words in lower case, may hold w in
// any case: it reads w's first and last bytes in lower case, and its
// length, as bit does.
func (f *wordFilter) mayFold(w []byte) bool {
	if len(w) == 0 {
		return true
	}
	k := (uint(len(w))*131 + uint(lower(w[0]))*7 + uint(lower(w[len(w)-1]))) & 255
	return f[k>>6]&(1<<(k&63)) != 0
}

// may reports whether the set may hold w.
func (f *wordFilter) may(w []byte) bool {
	if len(w) == 0 {
		return true
	}
	i, b := f.bit(w)
	return f[i]&b != 0
}

// keyWords finds the words of key, into dst as bounds, and returns their
// count: key splits on '_', '-', '.', ' ' and where camel case starts a
// word; at most len(dst) words.
func keyWords(dst *[16][2]int, key []byte) int {
	n, s := 0, 0
	for i := 0; i <= len(key) && n < len(dst); i++ {
		sep := i == len(key) || key[i] == '_' || key[i] == '-' || key[i] == '.' || key[i] == ' '
		if sep || i > s && isUpper(key[i]) && !isUpper(key[i-1]) {
			if i > s {
				dst[n] = [2]int{s, i}
				n++
			}
			s = i
			if sep {
				s = i + 1
			}
		}
	}
	return n
}

func classifyKey(key []byte) kvClass {
	if len(key) == 0 || len(key) > 64 {
		return kvNone
	}
	var buf [64]byte
	k := buf[:len(key)]
	letters := false
	for i, c := range key {
		k[i] = lower(c)
		letters = letters || isAlpha(c) || c >= 0x80
	}
	if !letters {
		return kvNone
	}
	if c, ok := exactKeys[string(k)]; ok {
		return c
	}
	// A dotted key is named by its last part: spring.datasource.password
	// is a password, session-7.scope a unit.
	var words [16][2]int
	nw := keyWords(&words, key)
	if d := bytes.LastIndexByte(k, '.'); d >= 0 && d+1 < len(k) {
		c := classifyKey(key[d+1:])
		if last := string(k[d+1:]); c == kvNone && (last == "id" || last == "value") && d > 0 {
			return classifyKey(key[:d]) // session.id: the session's
		}
		if (c == kvNone || c == kvLock) && nw > 0 && qualified(k, words[:nw], nw-1) {
			return kvSecret // security_questions.response
		}
		return c
	}
	// A compound names what its last words name: a setting word after the
	// last credential word makes the key a setting of it (password_file,
	// token_ttl, KeyStorePath), one before it only qualifies it
	// (enable_password, keyStorePassword), unless it counts or bounds it
	// (max_tokens).
	class, setting := kvNone, false
	for n := range nw {
		w := bytes.TrimRight(k[words[n][0]:words[n][1]], "0123456789") // password2: a second one
		switch {
		case boundWords[string(w)] || boundGlued(w):
			return kvNone
		case settingWords[string(w)] || interfaceWords[string(w)] || keeperWords[string(w)]:
			setting = class != kvNone
		case string(w) == "authorization":
			class, setting = kvAuth, false
		case credentialWords[string(w)] || glued(w) || qualified(k, words[:nw], n):
			class, setting = max(class, kvSecret), false
		}
	}
	if setting {
		return kvNone
	}
	if nw > 0 {
		last := string(k[words[nw-1][0]:words[nw-1][1]])
		switch {
		case class != kvAuth && nw > 1 && (last == "user" || last == "username" || personNouns[last] ||
			last == "by" && personVerbs[string(k[words[nw-2][0]:words[nw-2][1]])]) || class == kvNone && actorKeys[last]:
			return kvUser
		case class == kvNone && (phoneWords[last] || nw > 1 && last == "number" && phoneWords[string(k[words[nw-2][0]:words[nw-2][1]])]):
			return kvPhone
		case class == kvNone && (lockKeys[last] || nw == 1 && (last == "combination" || last == "combo") || gluedLockCode(last)):
			return kvLock
		}
	}
	return class
}

// lockKeys name a lock as a key's last word (keysafe=1964,
// "lockbox":"2210"), as "combination" and "combo" do alone (combo=31-07-88):
// the value is its code when shaped as one. Qualified, a combination is a
// secret whatever its shape (safe_combination, qualifiedNouns); after
// another word, none (error_combination).
var lockKeys = wordSet(`keysafe keybox lockbox padlock`)

// lockHeads are what a code glued after them opens (doorcode, gatecode,
// alarmcode): as the two words apart (door_code) do, the glued word names
// a lock's code.
var lockHeads = []string{"door", "gate", "entry", "alarm", "access", "lock", "safe", "keypad", "buzzer", "unlock",
	"vault", "garage", "lobby", "locker", "cabinet", "keysafe", "lockbox"}

// gluedLockCode reports whether w is one of lockHeads glued before "code"
// or "pin" (doorcode, gatepin).
func gluedLockCode(w string) bool {
	head, ok := strings.CutSuffix(w, "code")
	if !ok {
		if head, ok = strings.CutSuffix(w, "pin"); !ok {
			return false
		}
	}
	return slices.Contains(lockHeads, head)
}

// lockCodeEnd returns the end of a lock's code at src[i:]: at most 16
// digits, letters, '-', '#' and '*', three digits or more and two
// letters at most (4826, 31-07-88, 1122A, K-4417, 1492#), up to where a
// value ends; or i. A state (installed, true) or a name is no code.
func lockCodeEnd(src []byte, i int) int {
	digits, letters, e := 0, 0, i
	for ; e < len(src) && e-i <= 16; e++ {
		c := src[e]
		if isDigit(c) {
			digits++
		} else if isAlpha(c) {
			letters++
		} else if c != '-' && c != '#' && c != '*' {
			break
		}
	}
	if digits < 3 || letters > 2 || e-i > 16 {
		return i
	}
	if e < len(src) && valueEnd(src, e) != e && !(src[e] == '.' && (e+1 == len(src) || isSpace(src[e+1]))) {
		return i // more of the value follows
	}
	return e
}

// personNouns name a person by their part, as the last word of a key
// (AudioOwner, ticket_assignee, commit.author).
var personNouns = wordSet(`owner assignee author approver reviewer requester reporter`)

// actorKeys name a person by the work they do for the tool (adjuster=,
// inspector=, pilot=): the key's value is that person's account, when it
// is shaped as one (actorAccount).
var actorKeys = wordSet(`adjuster inspector technician surveyor assessor appraiser courier nurse clinician dispatcher cashier
	teller caseworker instructor pilot ranger volunteer picker packer`)

// actorKey reports whether the last word of key is one of actorKeys
// (pilot, drone_pilot, fieldAdjuster): a key classifyKey reads as an
// account's for that word alone, whose value must be shaped as one.
func actorKey(key []byte) bool {
	var words [16][2]int
	nw := keyWords(&words, key)
	if nw == 0 {
		return false
	}
	var buf [16]byte
	w := lowerInto(&buf, key[words[nw-1][0]:words[nw-1][1]])
	return w != nil && actorKeys[string(w)]
}

// actorAccount reports whether v is shaped as an account's name: three to
// 32 small letters, digits, '.', '_' or '-', starting with a letter, no
// word of prose, of a setting or of a role; joined or numbered (r.costa,
// van12), or letters that do not read as a word (dwalsh, kschultz):
// pilot=auto names no one.
func actorAccount(v []byte) bool {
	if len(v) < 3 || len(v) > 32 || v[0] < 'a' || v[0] > 'z' {
		return false
	}
	marked := false
	for _, c := range v {
		switch {
		case c >= 'a' && c <= 'z':
		case isDigit(c) || c == '.' || c == '_' || c == '-':
			marked = true
		default:
			return false
		}
	}
	if proseWord(v) || plainWord(v) || roleAccount(v) {
		return false
	}
	if marked {
		return true
	}
	cost, _ := runCost(v)
	return cost >= actorCost
}

// actorCost is the least mean letter-pair cost (runCost) of an account's
// name of letters alone: auto, manual and system cost less; dwalsh and
// kschultz more.
const actorCost = 36

// personVerbs are what a person does, before "by" in a key that names who
// did it (created_by, approvedBy); sorted_by and caused_by name no one.
var personVerbs = wordSet(`created updated modified changed approved reviewed requested submitted assigned deleted
	removed edited uploaded invited granted revoked signed owned authored committed opened closed resolved`)

// phoneWords name a phone number as the last word of a key, or before
// "number" (PhoneNumber, mobile, caller_msisdn, tel_number).
var phoneWords = wordSet(`phone phonenumber mobile msisdn tel telephone cell cellphone fax`)

// glued reports whether the word w is a credential noun with a word or an
// abbreviation glued before it (dbpassword, npmtoken, dbpass, ADMPWD,
// motdepasse), unless w is a word of its own (bypass, compass).
func glued(w []byte) bool {
	for _, n := range gluedNouns {
		if len(w) > len(n) && bytes.HasSuffix(w, []byte(n)) {
			return !gluedWords[string(w)]
		}
	}
	return false
}

var gluedNouns = []string{"password", "passwd", "secret", "token", "nonce", "pass", "passe", "pwd", "psk"}

// gluedWords end in a credential noun and name none.
var gluedWords = wordSet(`bypass compass overpass underpass surpass trespass impasse encompass byepass`)

// keyCache remembers the classes of the keys a Redactor met last: the
// lines of a log repeat their keys, and a key found here costs a hash and
// a comparison instead of classifyKey's searches.
type keyCache struct {
	slots [256]struct {
		key   [maxCachedKey]byte
		n     uint8 // length of key; 0: empty
		class kvClass
	}
}

const maxCachedKey = 24

// classify returns classifyKey(key), remembering the keys it met last as
// they are written (camel case splits words). c may be nil.
func (c *keyCache) classify(key []byte) kvClass {
	if c == nil || len(key) == 0 || len(key) > maxCachedKey {
		return classifyKey(key)
	}
	h := uint32(2166136261) // FNV-1a
	for _, b := range key {
		h = (h ^ uint32(b)) * 16777619
	}
	slot := &c.slots[h%uint32(len(c.slots))]
	if int(slot.n) == len(key) && string(slot.key[:slot.n]) == string(key) {
		return slot.class
	}
	class := classifyKey(key)
	copy(slot.key[:], key)
	slot.n, slot.class = uint8(len(key)), class
	return class
}

// isKeyByte reports whether c may be part of a key: a word byte, '-', '.',
// or a byte of a non-ASCII letter (contraseña, пароль).
func isKeyByte(c byte) bool { return isWord(c) || c == '-' || c == '.' || c >= 0x80 }

// valueEnd returns the end of an unquoted value starting at i.
func valueEnd(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r', ',', ';', '&', ')', ']', '}', '"', '\'', '<', '>', '|', '`':
			return i
		case '\\':
			if escapedBreak(src, i) {
				return i
			}
		}
		i++
	}
	return i
}

// typeTagEnd returns where the value after the YAML type tag at src[i]
// starts (!!str x, !!binary x, Ansible's !unsafe 'x'), or i when there
// is none: the tag says how to read the value and is no part of it.
func typeTagEnd(src []byte, i int) int {
	e := i
	switch {
	case hasPrefixFold(src[i:], "!!"):
		e += 2
		for e < len(src) && e-i < 18 && isAlpha(src[e]) {
			e++
		}
		if e == i+2 {
			return i
		}
	case hasPrefixFold(src[i:], "!unsafe"):
		e += len("!unsafe")
	default:
		return i
	}
	if e+1 >= len(src) || src[e] != ' ' || isSpace(src[e+1]) {
		return i
	}
	return e + 1
}

// escapedBreak reports whether src[i] starts the escape of a control
// character (escapeLen): it ends a value as the character itself would.
// The backslash is looked at first, so that the loops that read a value
// byte by byte call it at every byte for the cost of one comparison.
func escapedBreak(src []byte, i int) bool { return src[i] == '\\' && escapeLen(src, i) > 0 }

// escapeLen returns the length of the backslash escape of a control
// character that starts at src[i], 0 when none does: \n, \r, \t and the
// other escapes of JSON and Go (\b, \f, \v, \a), and the control
// characters by number (\u000a, \x1b). A message logged on one line writes
// its line breaks, tabs and terminal codes so, and every pass that
// delimits a value or a token reads such an escape as the separator it
// stands for: the letter after the backslash is no part of the next word.
func escapeLen(src []byte, i int) int {
	if i+1 >= len(src) || src[i] != '\\' {
		return 0
	}
	switch src[i+1] {
	case 'n', 'r', 't', 'b', 'f', 'v', 'a':
		return 2
	case 'u':
		if i+6 <= len(src) && src[i+2] == '0' && src[i+3] == '0' && (src[i+4] == '0' || src[i+4] == '1') && isHex(src[i+5]) {
			return 6
		}
	case 'x':
		if i+4 <= len(src) && (src[i+2] == '0' || src[i+2] == '1') && isHex(src[i+3]) {
			return 4
		}
	}
	return 0
}

// afterEscape returns s, the start of a token that follows a byte no
// token holds, moved past the escape of a control character that starts
// at that byte (the n of "\nbob@example.com"), but not beyond end.
func afterEscape(src []byte, s, end int) int {
	if s > 0 && src[s-1] == '\\' {
		if n := escapeLen(src, s-1); n > 0 {
			return min(s-1+n, end)
		}
	}
	return s
}

// phraseEnd returns the end of a pass phrase that starts with the word
// src[s:e]: the words of lower-case letters after it, two or more, up to a
// word of prose (a function word, a word of grammar, a verb's ending, a
// plural's) or anything else; e when the value is one word, or when its
// first word is one of prose too (necessarily best effort).
func phraseEnd(src []byte, s, e int) int {
	if !isLowerWord(src[s:e]) || !phraseWord(src[s:e]) {
		return e
	}
	end, n := e, 1
	for k := e; k+1 < len(src) && src[k] == ' ' && n < 24; {
		w := k + 1
		for w < len(src) && src[w] >= 'a' && src[w] <= 'z' {
			w++
		}
		if w == k+1 || w-k > 16 || w < len(src) && isWord(src[w]) || !phraseWord(src[k+1:w]) {
			break
		}
		end, n, k = w, n+1, w
	}
	if n < 3 {
		return e
	}
	return end
}

// phraseWord reports whether the lower-case word w may be a word of a
// pass phrase, drawn at random, rather than one of the sentence around it.
func phraseWord(w []byte) bool {
	return nameLike(w) && !grammarWords[string(w)] && !englishPlural(w)
}

// testResult reports whether the key at ks starts go test's line for a
// test's outcome: "--- ", indented by the subtest's depth, at the start of
// a line.
func testResult(src []byte, ks int) bool {
	if ks < 4 || string(src[ks-4:ks]) != "--- " {
		return false
	}
	k := ks - 4
	for k > 0 && src[k-1] == ' ' {
		k--
	}
	return k == 0 || src[k-1] == '\n'
}

// sentenceAfter reports whether the text at vs, after a key and a colon,
// opens a sentence rather than giving a value: a word of letters (or a
// capitalised word that is a sentence of its own, "Required."), then one
// of the next three words, across a full stop, is a function word (an
// article, a preposition, a conjunction, a pronoun or an auxiliary) of
// one of the languages whose credential words the redactor knows: no
// value is followed by grammar, and none is a function word followed by
// more words (Mot de passe : au moins 12 caractères). A number is a word
// of the sentence (mínimo 10 caracteres, una mayúscula).
func sentenceAfter(src []byte, vs int) bool {
	letter := func(c byte) bool { return isAlpha(c) || c >= 0x80 }
	e := vs
	for e < len(src) && e-vs <= 32 && letter(src[e]) {
		e++
	}
	if e == vs || e-vs > 32 || e+2 >= len(src) {
		return false
	}
	k := e
	if src[e] == '.' {
		if src[e+1] != ' ' || src[e+2] < 'A' || src[e+2] > 'Z' || src[vs] < 'A' || src[vs] > 'Z' || !isLowerWord(src[vs+1:e]) {
			return false
		}
		k = e + 1 // "Required. The name of …": the next sentence shows the grammar
	} else if src[e] == ' ' && letter(src[e+1]) && closedClassWords[string(lowerASCII(src[vs:e]))] {
		return true
	}
	for n := 0; n < 3 && k+1 < len(src) && src[k] == ' '; n++ {
		w := k + 1
		for w < len(src) && w-k <= 24 && (letter(src[w]) || isDigit(src[w])) {
			w++
		}
		if w == k+1 || w < len(src) && src[w] != ' ' && src[w] != ',' && src[w] != '.' {
			return false
		}
		if closedClassWords[string(lowerASCII(src[k+1:w]))] {
			return true
		}
		if k = w; k < len(src) && src[k] != ' ' {
			k++ // "Output only. The …": the sentence goes on past its stop
		}
	}
	return false
}

// closedClassWords are the closed classes of English and of the other
// languages of credentialWords written with spaces between words:
// articles, pronouns, prepositions, conjunctions and auxiliaries.
var closedClassWords = wordSet(`a an the this that these those it its we you they he she i
	of to in on at by for from with into onto about over under between through without within
	and or but nor if when while because so than as
	is are was were be been being has have had do does did can could will would shall should may must not
	el la los las un una unos unas lo de del al en con por para sin sobre entre hasta desde y e o u ni pero que como es son debe
	els les uns unes amb per sense però és
	le des du au aux à dans avec pour sans sur sous et ou mais dont est sont doit
	der die das den dem ein eine einen einem einer und oder aber mit für von zu bei aus nach über unter ohne ist sind muss
	os um uma umas do da dos das em no na nos nas pelo pela pelos pelas ao aos às num numa com sem mas é são deve
	il gli uno di della dei delle nel nella alla ai dal dalla sul sulla senza su tra fra ma che è sono
	het een maar met voor van op aan bij uit naar zonder zijn moet
	ett och eller men för av på till från utan är ska og eller til fra uten uden er skal
	w z na od dla bez oraz lub albo ale że co jest są musi
	v ve ze pro nebo je jsou musí
	ve veya ile için bir
	и в на с для без или но что по из от до не`)

// passPhrase reports whether v, lower-case words separated by single
// spaces and quoted, reads as a pass phrase rather than a sentence: three
// to eight words of three to ten letters, none of them a function word (a
// sentence has them), none a setting's word.
func passPhrase(v []byte) bool {
	n := phraseWords(v, ' ', settingWords)
	return n >= 3 && n <= 8
}

func isLowerWord(w []byte) bool {
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return len(w) >= 3
}

// secretValueEnd returns the end of an unquoted secret starting at i. A
// secret may hold ',', ';' and '&' (passwords do), so those end it only
// where a new field begins: before whitespace or another key=value. Cutting
// earlier would show the secret's tail.
func secretValueEnd(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r', '"', '\'', '<', '>', '|', '`':
			return i
		case '\\':
			if escapedBreak(src, i) {
				return i
			}
		case ',', ';', '&':
			// A query's next parameter has no space in its key
			// (&user=x); a connection string's may (;User Id=sa).
			if i+1 >= len(src) || src[i+1] == ' ' || src[i+1] == '\t' || startsAssignment(src[i+1:]) && (src[i] != '&' || !spaceBeforeSep(src[i+1:])) {
				return i
			}
		case ')', ']', '}':
			// A closer ends the value where the enclosing text resumes;
			// followed by anything else it is part of the secret
			// (password=ab)c]d), and cutting there would show the tail.
			if i+1 >= len(src) || closesValue(src[i+1]) {
				return i
			}
		}
		i++
	}
	return i
}

// closesValue reports whether c, after a closing bracket, shows that the
// bracket closed the text around a value rather than sat inside it.
func closesValue(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ';', '.', ':', ')', ']', '}', '"', '\'', '&', '|', '<', '>', '`':
		return true
	}
	return false
}

// startsAssignment reports whether b opens with key= (a key of word bytes,
// dashes, dots and single inner spaces, as in "User Id=sa").
func startsAssignment(b []byte) bool {
	if len(b) == 0 || !isAlpha(b[0]) && b[0] != '_' {
		return false
	}
	for n := 1; n < len(b) && n < 64; n++ {
		switch c := b[n]; {
		case c == '=' || c == ':':
			return b[n-1] != ' '
		case isKeyByte(c):
		case c == ' ' && b[n-1] != ' ':
		default:
			return false
		}
	}
	return false
}

// spaceBeforeSep reports whether the key at the start of b holds a space
// before its separator.
func spaceBeforeSep(b []byte) bool {
	for n := 0; n < len(b) && n < 64; n++ {
		switch b[n] {
		case '=', ':':
			return false
		case ' ':
			return true
		}
	}
	return false
}

// lineEnd returns the end of the header value starting at i: the end of the
// line, or a closing quote.
func lineEnd(src []byte, i int, quote byte) int {
	for i < len(src) && !valueStop(src, i, quote) {
		i++
	}
	return i
}

var authSchemes = []string{"bearer ", "basic ", "digest ", "negotiate ", "token ", "ntlm ", "apikey ", "aws4-hmac-sha256 ", "hmac ", "key "}

// nextByte returns the index of the first c in src at or after i, or
// len(src).
func nextByte(src []byte, i int, c byte) int {
	if k := bytes.IndexByte(src[i:], c); k >= 0 {
		return i + k
	}
	return len(src)
}

// redactKV finds separators and classifies the key before each one.
func redactKV(rw *rewriter) {
	src := rw.src
	// eq and colon are the next '=' and ':' at or after i (len(src): none),
	// found with IndexByte, so that the bytes between separators are not
	// looked at one by one.
	eq, colon := -1, -1
	// pending is the class that a name/value pair's name gives its value
	// ({"name":"DB_PASSWORD","value":"…"}, <add key="ApiKey" value="…"/>),
	// until pendingEnd; inCookies is set after a cookies key that holds a
	// list or an object, whose values are cookies.
	pending, pendingEnd, inCookies := kvNone, 0, false
	loginEnd := 0 // a remote call's params up to here log in: {"method":"auth.login","params":[u, p]}
	for i := 0; i < len(src); i++ {
		if eq < i {
			eq = nextByte(src, i, '=')
		}
		if colon < i {
			colon = nextByte(src, i, ':')
		}
		i = min(eq, colon)
		if i >= len(src) {
			return
		}
		c := src[i]
		vs, op := i+1, i
		if c == ':' {
			if vs < len(src) && (src[vs] == '/' || src[vs] == ':') {
				continue // URL scheme or IPv6, not an assignment
			}
			if vs+1 < len(src) && (src[vs] == '"' || src[vs] == '\'') && strings.IndexByte(" );,}]\n", src[vs+1]) >= 0 {
				continue // a colon that ends a quoted string ends a prompt ("Password:" )
			}
			if vs < len(src) && src[vs] == '=' {
				vs++ // Go's token := value
			}
		} else {
			if i > 0 && (src[i-1] == '=' || src[i-1] == '!' || src[i-1] == '<' || src[i-1] == '>') {
				continue
			}
			// An assignment's operator: :=, ?=, .=, +=, ::=, :::=.
			for op = i; op > 0 && i-op < 4 && (src[op-1] == ':' || src[op-1] == '?' || src[op-1] == '.' || src[op-1] == '+'); op-- {
			}
			if vs < len(src) && src[vs] == '=' {
				continue
			}
			if vs < len(src) && src[vs] == '>' {
				vs++
			}
		}
		// Find the key.
		// An aligned column of keys pads them with spaces; a subscript
		// quotes its key in brackets (os.environ["X"] = …).
		ke := op
		for ke > 0 && ke > op-32 && (src[ke-1] == ' ' || src[ke-1] == '\t' || src[ke-1] == '+') {
			ke--
		}
		if ke > 1 && src[ke-1] == ']' && (src[ke-2] == '"' || src[ke-2] == '\'') {
			ke--
		}
		if ke > 0 && (src[ke-1] == '"' || src[ke-1] == '\'') {
			ke--
			if ke > 0 && src[ke-1] == '\\' {
				ke-- // \"key\": an escaped JSON key inside a message
			}
		}
		ks := ke
		for ks > 0 && isKeyByte(src[ks-1]) {
			ks--
		}
		for ks < ke && src[ks] == '-' {
			ks++ // --password=x: the key is password
		}
		ks = afterEscape(src, ks, ke) // \npassword=x: an escaped line break, then the key
		if ks == ke || c == ':' && ks > 0 && src[ks-1] == '$' {
			continue // no key, or a variable's name ($USER:$PASS)
		}
		key := src[ks:ke]
		class := rw.keys.classify(key)
		if class == kvSecret && string(key) == "PASS" && testResult(src, ks) {
			class = kvNone // --- PASS: TestParse (0.01s): a test that passed, and its name
		}
		lk := lowerASCII(key)
		if class == kvNone && string(lk) == "id" && ks >= 2 && (src[ks-1] == ' ' || src[ks-1] == '+') {
			// User Id=sa; Subscription ID: …; Directory (tenant) ID: …
			before := src[max(0, ks-24) : ks-1]
			switch {
			case hasSuffixFold(before, "user"):
				class = kvUser
			case hasSuffixFold(before, "subscription") || hasSuffixFold(before, "tenant") || hasSuffixFold(before, "tenant)") ||
				hasSuffixFold(before, "account") || hasSuffixFold(before, "project"):
				class = kvAccount
			}
		}
		if (string(lk) == "key" || qualifiedFilter.may(lk) && qualifiedNouns[string(lk)] != nil) && ks >= 2 && src[ks-1] == ' ' && isAlpha(src[ks-2]) {
			// A noun after a word is that word's: API key, Guard code,
			// security answer; a public key or a host key is no secret.
			pw := ks - 1
			for pw > 0 && ks-pw < 24 && isAlpha(src[pw-1]) {
				pw--
			}
			if two := rw.keys.classify(src[pw:ke]); two != kvNone || !determiners[string(lowerASCII(src[pw:ks-1]))] {
				class = two
			}
		}
		if class == kvNone && string(lk) == "code" && (c == '=' || src[min(vs, len(src)-1)] == '"' || vs+1 < len(src) && src[vs] == ' ' && src[vs+1] == '"') {
			// A code, quoted or in a query, is a PIN or a one-time code
			// (code=8268, code: "3310"); an error or status code is a bare
			// number.
			if e := rw.announcedDigits(i, digitCode); e > i {
				i = e - 1
				continue
			}
		}
		// A name/value pair's attributes may be one letter long:
		// <p n="password" v="x"/>.
		isValueKey := string(lk) == "value" || string(lk) == "v"
		if isValueKey && ks < pendingEnd && pending != kvNone {
			class = pending
		} else if isValueKey && inCookies {
			class = kvSecret
		}
		nameKey := string(lk) == "name" || string(lk) == "key" || string(lk) == "n"
		if class == kvNone && !nameKey && ks > 0 && src[ks-1] == ' ' {
			if s, t := namedElementText(src, ks, vs); t > s && !notASecret(src, s, t) {
				// <ns:Password Type="…">x</ns:Password>: the text of an
				// element named for a credential, after its attributes.
				rw.mask(s, t, kSecret)
				i = t - 1
				continue
			}
		}
		if class == kvNone && string(lk) == "method" {
			if e := loginMethodEnd(src, vs); e > 0 {
				loginEnd = e + 128
			}
		}
		if class == kvNone && string(lk) == "params" && ks < loginEnd {
			if e := rw.loginParams(vs); e > 0 {
				i = e - 1
				continue
			}
		}
		if class == kvNone && !nameKey {
			if s, e := realmEntry(src, ks, vs); e > s {
				if !roleAccount(key) {
					rw.mask(ks, ke, kUser)
				}
				rw.mask(s, e, kSecret)
				i = e - 1
			}
			continue
		}
		// Find the value.
		for vs < len(src) && (src[vs] == ' ' || src[vs] == '\t' || src[vs] == '+') && vs < i+4 {
			vs++
		}
		if vs >= len(src) {
			continue
		}
		if src[vs] == '!' {
			vs = typeTagEnd(src, vs)
		}
		var quote byte
		if bytes.HasPrefix(src[vs:], []byte(`<<"`)) {
			vs += 2 // an Erlang binary: <<"value">>
		}
		if q := src[vs]; q == '"' || q == '\'' || q == '`' {
			quote = q
			vs++
		} else if q == '\\' && vs+1 < len(src) && src[vs+1] == '"' {
			// An escaped JSON string inside a message: \"value\"
			quote = '\\'
			vs += 2
		}
		if _, _, n, ok := canonical.ParseHandle(src[vs:]); ok && vs+n < len(src) && !isSpace(src[vs+n]) && !closesValue(src[vs+n]) {
			vs += n // a handle proves nothing about what is glued to it
		} else if vs < len(src) && isPlaceholder(src[vs:]) {
			continue
		}
		if nameKey && quote != '\\' {
			// The name of a name/value pair: its value, when it reads as a
			// key, classifies the value that follows.
			e := vs
			for e < len(src) && e-vs <= 48 && isKeyByte(src[e]) {
				e++
			}
			named := kvNone
			if e > vs && e-vs <= 48 && (quote == 0 || e < len(src) && src[e] == quote) && !mixedClasses(src[vs:e]) {
				named = rw.keys.classify(src[vs:e])
			}
			// key=ApiKey names a key; key=5f2b8c0e… is one.
			if e > vs && e-vs <= 48 && (quote == 0 || e < len(src) && src[e] == quote) && !mixedClasses(src[vs:e]) &&
				(string(lk) == "name" || named != kvNone || !hasDigit(src[vs:e])) {
				if s, t := elementText(src, e); named == kvSecret && t > s && !notASecret(src, s, t) {
					// <entry key='db.password'>x</entry>: the element's text
					rw.mask(s, t, kSecret)
					i = t - 1
					continue
				}
				pending, pendingEnd = named, e+96
				if pending == kvNone && inCookies {
					pending = kvSecret
				}
				i = e - 1
				continue
			}
			if class == kvNone {
				continue
			}
		}
		if class == kvSecret && quote == 0 {
			if e := byteList(src, vs); e > vs {
				rw.mask(vs, e, kSecret) // key material as a list of bytes
				i = e - 1
				continue
			}
		}
		if quote == 0 && vs+1 < len(src) && (src[vs] == '[' || src[vs] == '{') && class != kvAuth && opensStructure(src[vs:]) {
			// A list or an object: its members carry their own names,
			// but a cookies list holds cookies, and a list of strings
			// (set-cookie: ["sid=…"]) the values themselves.
			if class == kvCookie || (class == kvSecret && hasPrefixFold(lk, "cookie")) {
				inCookies = true
			}
			if vs+1 < len(src) && src[vs] == '[' && src[vs+1] == '"' && class != kvNone {
				vs += 2
				quote = '"'
			} else {
				continue
			}
		}
		if class == kvSecret || class == kvAuth || class == kvCookie {
			if quote == '`' && bytes.IndexByte(src[vs:min(len(src), vs+maxRef)], ' ') >= 0 {
				i = vs // `etcdctl get /x`: a command's output
				continue
			}
			if e := refEnd(src, vs); e > 0 && (e == len(src) || closesValue(src[e]) || src[e] == '\\' || src[e] == '%' || src[e] == '[') {
				// ${DB_PASSWORD}, os.Getenv("X"): a reference, kept; the
				// arguments of a call are read (Session(password='x')).
				if i = e - 1; isAlpha(src[vs]) {
					i = vs
				}
				continue
			}
			if e := noteEnd(src, vs); e > 0 {
				i = e - 1 // (not set)
				continue
			}
		}
		if class != kvCookie && class != kvPID && class != kvPhone && c == ':' && quote == 0 && sentenceAfter(src, vs) {
			// "credentials: unable to read the file", "Server: Hostname or
			// IP address of the server", "Password: Required. Password for
			// the connection.": a sentence after a colon, not a value.
			continue
		}
		if (class == kvUser || class == kvSecret) && c == ':' && quote == 0 {
			// "Last login: Mon Mar 2", "handle_auth: authentication
			// succeeded", "password: changed [redacted]": prose after a
			// colon, a word of a sentence that goes on. Only the word
			// itself is read, so that a value that is not one costs nothing.
			e := vs
			for e < len(src) && e-vs <= 32 && isAlpha(src[e]) {
				e++
			}
			if e > vs && e-vs <= 32 && (e == len(src) || src[e] == ' ') && !nameLike(src[vs:e]) && class == kvUser {
				continue
			}
			if e > vs && e-vs <= 32 && e+1 < len(src) && (src[e] == ' ' && (isAlpha(src[e+1]) || src[e+1] == '[' || src[e+1] == '(') || src[e] == ':' && src[e+1] == ' ') &&
				class == kvSecret && proseWord(src[vs:e]) {
				continue
			}
		}
		if class == kvPID {
			// Only a number is a process id. Look at the digits alone: a
			// value that is not one is left unread, so that pid=pid=pid=…
			// costs linear time.
			e := vs
			for e < len(src) && isDigit(src[e]) {
				e++
			}
			if e > vs && valueEnd(src, e) == e {
				rw.mask(vs, e, kPID)
				i = e - 1
			}
			continue
		}
		if class == kvLock {
			if e := lockCodeEnd(src, vs); e > vs {
				rw.mask(vs, e, kSecret)
				i = e - 1
			}
			continue
		}
		if class == kvPhone {
			// A number of a phone's length in any of its forms; a key
			// named "number" holds many other things too, never one that
			// phoneEnd reads.
			if e := phoneEnd(src, vs, vs < len(src) && src[vs] == '+'); e > vs {
				rw.mask(vs, e, kPhone)
				i = e - 1
			} else if e := localEnd(src, vs); e > vs {
				rw.mask(vs, e, kPhone) // "phone":"555-0126": a local number
				i = e - 1
			}
			continue
		}
		var ve int
		switch {
		case class == kvAuth:
			ve = authEnd(src, vs, quote)
		case class == kvCookie:
			q := quote
			if q == '\\' {
				q = '"'
			}
			ve = lineEnd(src, vs, q)
			if quote == '\\' && ve > vs && src[ve-1] == '\\' {
				ve--
			}
		case quote == '\\':
			ve = vs
			for ve < len(src) && !(src[ve] == '\\' && ve+1 < len(src) && src[ve+1] == '"') {
				ve++
			}
		case quote != 0:
			ve = vs
			for ve < len(src) && src[ve] != quote && src[ve] != '\n' {
				if src[ve] == '\\' {
					ve++
				}
				ve++
			}
			if ve > len(src) {
				ve = len(src)
			}
		case class == kvSecret:
			ve = phraseEnd(src, vs, secretValueEnd(src, vs))
			if phraseKey(key) {
				ve = max(ve, phraseToLineEnd(src, vs)) // psk=roses are red 1952
			}
			if ve-vs > 1 && src[ve-1] == ':' && (ve == len(src) || src[ve] == ' ') {
				ve-- // x: validation error: the colon is the sentence's
			}
		default:
			ve = valueEnd(src, vs)
		}
		if ve <= vs {
			continue
		}
		val := src[vs:ve]
		if quote == 0 && lower(val[len(val)-1]) == lower(key[len(key)-1]) && namesItsKey(key, val) {
			i = ve - 1 // Container: container, IDTokenFetcher: idTokenFetcher: the variable that holds it
			continue
		}
		switch class {
		case kvAuth:
			for _, s := range authSchemes {
				if hasPrefixFold(val, s) && len(val) > len(s) {
					vs += len(s)
					break
				}
			}
			if e := refEnd(src, vs); e > 0 || authParams(src[vs:ve]) || maskValue(bytes.Trim(src[vs:ve], "[]()<>")) {
				i = max(e, vs) - 1 // Bearer $TOKEN; Bearer realm="api"; Basic [REDACTED]: no credential
				continue
			}
			rw.mask(vs, ve, kSecret)
		case kvCookie:
			maskCookies(rw, vs, ve)
		case kvSecret:
			if quote == 0 && len(val) <= 128 && nestedPair(val) {
				// api_keys: primary=active: the pair inside is read as one
				// (a long run is masked whole, so that the keys inside it
				// are not each read to its end).
				i = vs
				continue
			}
			if class == kvSecret && (maskValue(bytes.Trim(val, "[]()")) || pathValue(val) || (allDigits(val) && len(val) < 4) || enumerated(val) || localeTag(val) ||
				(sentence(val) && (quote == 0 || !passPhrase(val)) || wordName(val)) && generatedKey(key) || authMethod(key, val)) {
				i = ve - 1
				continue
			}
			rw.mask(vs, ve, kSecret)
		case kvUser:
			role := !(allDigits(val) && len(val) <= 5) && roleAccount(val)
			if allDigits(val) && len(val) <= 5 || role || maskValue(val) || enumerated(val) || refEnd(src, vs) > 0 || val[0] == '/' ||
				actorKey(key) && !actorAccount(val) ||
				len(val) <= 128 && bytes.IndexByte(val, '=') > 0 {
				// uid=0, euid=1000: numeric ids of system accounts; admin,
				// ci: accounts named for their role; *****: a mask; a
				// path or a command (CreatedBy: /bin/sh -c …) names no one;
				// nor does an assignment (login: user=x), read on its own
				// (a short one: a long run is masked whole, so that the
				// keys inside it are not each read to its end).
				if role && refEnd(src, vs) <= 0 {
					rw.keptRole(vs, ve) // svc_inventory: masked beside an exposed secret
				}
				continue
			}
			if quote == 0 && bytes.IndexByte(val, ':') > 0 {
				// Accounts with their passwords, user:pass[,user:pass…]:
				// the list is the secret.
				for ve < len(src) && src[ve] == ',' {
					n := valueEnd(src, ve+1)
					if bytes.IndexByte(src[ve+1:n], ':') <= 0 {
						break
					}
					ve = n
				}
				rw.mask(vs, ve, kSecret)
				i = ve - 1
				continue
			}
			rw.mask(vs, ve, kUser)
		case kvHost:
			if string(lowerASCII(val)) == "localhost" || isLoopback(val) || documentationName(val) || enumerated(val) || refEnd(src, vs) > 0 ||
				maskValue(val) || runtimeHost(val) ||
				addressFields[string(lowerASCII(val))] || addressField(val) || val[0] == '/' {
				// RADIUS, AUTO: a kind of server, not a name; host:mappedPort,
				// a notation; host=/var/run/postgresql, a socket's directory
				i = ve - 1
				continue
			}
			rw.mask(vs, ve, kHost)
		case kvProject:
			if projectID(val) {
				rw.mask(vs, ve, kAccount)
			}
		case kvPod:
			rw.mask(vs, ve, kPod)
		case kvContainer:
			rw.mask(vs, ve, kContainer)
		case kvAccount:
			rw.mask(vs, ve, kAccount)
		}
		i = ve - 1
	}
}

// authMethods name ways to authenticate: the value of an auth setting
// that names one (BEDROCK_AUTH=bearer, auth: OAuth) chooses the method,
// and holds no credential.
var authMethods = wordSet(`bearer basic digest negotiate ntlm kerberos gssapi oauth oauth2 oidc saml ldap none
	anonymous iam sigv4 mtls tls jwt apikey token password cert certificate ssh scram plain md5 trust peer ident`)

// authMethod reports whether the key's last word is auth (or
// authentication) and val names a method (authMethods) or is words joined
// (default-chain).
func authMethod(key, val []byte) bool {
	var words [16][2]int
	n := keyWords(&words, key)
	if n == 0 {
		return false
	}
	switch string(lowerASCII(key[words[n-1][0]:words[n-1][1]])) {
	case "auth", "authentication", "authn":
		return authMethods[string(lowerASCII(val))] || wordName(val) // (lowerASCII: nil past 16 bytes)
	}
	return false
}

// wordName reports whether v is two or three lower-case words joined by
// '-' or '_' (toddler-hour): a name, which no generated key, token or
// session is.
func wordName(v []byte) bool {
	if len(v) > 32 || !isLowerName(v) {
		return false
	}
	parts := 1
	for s, k := 0, 0; k <= len(v); k++ {
		if k < len(v) && v[k] != '-' && v[k] != '_' {
			if !isAlpha(v[k]) {
				return false
			}
			continue
		}
		if k-s < 3 {
			return false
		}
		if cost, _ := runCost(v[s:k]); cost > wordLimit {
			return false
		}
		if k < len(v) {
			parts++
		}
		s = k + 1
	}
	return parts >= 2 && parts <= 3
}

// namesItsKey reports whether the unquoted value v is the name of its
// key, or of the key's last word, in any case (Container: container,
// "webhook-signature" => signature): code passes the variable that holds
// a field's value under the field's name, and no value is its own name.
func namesItsKey(key, v []byte) bool {
	n := len(key) - len(v)
	if len(v) < 3 || n < 0 || lower(v[len(v)-1]) != lower(key[len(key)-1]) || !isAlpha(v[0]) || !bytes.EqualFold(key[n:], v) {
		return false
	}
	for _, c := range v {
		if !isWord(c) {
			return false
		}
	}
	// The whole key, or its last word: after a separator, or where camel
	// case starts it (idTokenFetcher in IDTokenFetcher, tools in sessionTools).
	return n == 0 || key[n-1] == '_' || key[n-1] == '-' || key[n-1] == '.' || key[n-1] == ' ' ||
		isUpper(key[n]) && (!isUpper(key[n-1]) || n+1 < len(key) && !isUpper(key[n+1]))
}

// elementText returns the bounds of the text of the element whose
// attribute's value ends at e (<entry key='x'>text</entry>): s == t when
// the tag goes on with more attributes, closes itself or holds no text.
func elementText(src []byte, e int) (s, t int) {
	if e < len(src) && (src[e] == '\'' || src[e] == '"') {
		e++
	}
	if e >= len(src) || src[e] != '>' {
		return 0, 0
	}
	s = e + 1
	t = s
	for t < len(src) && t-s < 256 && src[t] != '<' && src[t] != '>' && src[t] != '\n' {
		t++
	}
	if t == s || t+1 >= len(src) || src[t] != '<' || src[t+1] != '/' {
		return 0, 0
	}
	return s, t
}

// namedElementText returns the bounds of the text of the element whose
// last attribute's key starts at ks and whose quoted value starts at vs,
// when the element's name, without its namespace's prefix, names a
// credential (<wsse:Password Type="…">x</wsse:Password>); s == t when it
// does not.
func namedElementText(src []byte, ks, vs int) (s, t int) {
	if vs >= len(src) || src[vs] != '"' && src[vs] != '\'' {
		return 0, 0
	}
	k := bytes.IndexByte(src[vs+1:min(len(src), vs+257)], src[vs])
	if k < 0 {
		return 0, 0
	}
	if s, t = elementText(src, vs+1+k); t <= s {
		return 0, 0
	}
	lt := ks - 1
	for lt > 0 && ks-lt < 128 && src[lt] != '<' && src[lt] != '>' && src[lt] != '\n' {
		lt--
	}
	if src[lt] != '<' {
		return 0, 0
	}
	ne := lt + 1
	for ne < ks && isKeyByte(src[ne]) || ne < ks && src[ne] == ':' {
		ne++
	}
	name := src[lt+1 : ne]
	if c := bytes.LastIndexByte(name, ':'); c >= 0 {
		name = name[c+1:]
	}
	if classifyKey(name) != kvSecret {
		return 0, 0
	}
	return s, t
}

// loginMethodEnd returns the end of the quoted method name at vs when a
// verb of logging in names the method of a remote procedure call
// (auth.login, user.signin), or 0: its params are then an account and its
// password.
func loginMethodEnd(src []byte, vs int) int {
	if vs < len(src) && src[vs] == ' ' {
		vs++
	}
	if vs >= len(src) || src[vs] != '"' {
		return 0
	}
	e := vs + 1
	for e < len(src) && e-vs < 64 && src[e] != '"' {
		e++
	}
	m := src[vs+1 : e]
	if k := bytes.LastIndexAny(m, "._/"); k >= 0 {
		m = m[k+1:]
	}
	if e < len(src) && loginVerbNames[string(lowerASCII(m))] {
		return e
	}
	return 0
}

// loginParams masks the password of the params of a remote call that logs
// in, a list of an account and its password at vs (["u", "x"]), and
// returns its end, or 0.
func (rw *rewriter) loginParams(vs int) int {
	src := rw.src
	if vs < len(src) && src[vs] == ' ' {
		vs++
	}
	if !bytes.HasPrefix(src[vs:], []byte(`["`)) {
		return 0
	}
	var args [3][2]int
	if n := callArgs(src, vs+1, &args); n == 2 && args[1][1] > 0 && args[1][1]+1 < len(src) && src[args[1][1]+1] == ']' &&
		!notASecret(src, args[1][0], args[1][1]) {
		rw.mask(args[1][0], args[1][1], kSecret)
		return args[1][1]
	}
	return 0
}

// loginVerbNames name a remote method that logs in.
var loginVerbNames = wordSet(`login logon signin authenticate`)

// realmEntry returns the bounds of the password of a realm file's line
// (jetty, ActiveMQ, Tomcat: "alice=Secret1,admin", "alice: Secret1,
// admin, user") whose account's key starts the line at ks and whose value
// starts at vs: a word shaped like a password, then a comma and a role's
// name; s == e when the line is not one. A quote or a bracket before the
// password must close before the comma: one that runs past it holds the
// list as one string (a struct tag's json:"name,omitempty") or one list.
func realmEntry(src []byte, ks, vs int) (s, e int) {
	if !directive(src, ks) {
		return 0, 0
	}
	for vs < len(src) && vs-ks < 80 && src[vs] == ' ' {
		vs++
	}
	ve := vs
	for ve < len(src) && ve-vs < 64 && src[ve] != ',' && !isSpace(src[ve]) {
		ve++
	}
	if vs < len(src) && (src[vs] == '"' || src[vs] == '\'') && (ve-vs < 2 || src[ve-1] != src[vs]) || unclosed(src[vs:ve]) {
		return 0, 0 // json:"name,omitempty", on: [push, pull_request]: one string or list holds the commas
	}
	r := ve + 1
	for r < len(src) && src[r] == ' ' {
		r++
	}
	if ve >= len(src) || src[ve] != ',' || r >= len(src) || !isAlpha(src[r]) || ve-vs < 6 || !passwordShaped(src[vs:ve]) ||
		numberWithUnit(src[vs:ve]) || notASecret(src, vs, ve) {
		return 0, 0
	}
	for r < len(src) && (isWord(src[r]) || src[r] == '-') {
		r++
	}
	if r < len(src) && src[r] != ',' && !isSpace(src[r]) {
		return 0, 0 // a role is a name: level=Warn5,file=x is no realm
	}
	return vs, ve
}

// addressFields are the names of an address's fields: after a host's key
// they write its notation (host:port, host=host), not a machine's name.
var addressFields = wordSet(`host hostname port addr address ip`)

// addressField reports whether v is an identifier in camel case whose
// last word names an address's field (mappedPort, serverAddr): the name
// of a variable that holds it, in a notation.
func addressField(v []byte) bool {
	k := len(v) - 1
	for k > 0 && !isUpper(v[k]) {
		k--
	}
	return k > 0 && allLetters(v) && !isUpper(v[0]) && addressFields[string(lowerASCII(v[k:]))]
}

// unclosed reports whether v opens more brackets than it closes: what
// follows it belongs to the list or the block it opened.
func unclosed(v []byte) bool {
	n := 0
	for _, c := range v {
		switch c {
		case '(', '[', '{':
			n++
		case ')', ']', '}':
			n--
		}
	}
	return n > 0
}

// nestedPair reports whether v, a value, is itself a key and its value
// (primary=active, clientSecret=x): a name of two letters or more, in
// small letters or camel case, that reads as words, '=', and more, which
// the pass reads as a pair of its own. Base64's '=' pads its end.
func nestedPair(v []byte) bool {
	k := bytes.IndexByte(v, '=')
	if k < 2 || k+1 >= len(v) || v[k+1] == '=' {
		return false
	}
	if isUpper(v[0]) {
		return false // DVURjS=91Zjw: a password's '='
	}
	for j, c := range v[:k] {
		if !isAlpha(c) && c != '_' || j > 0 && isUpper(c) && isUpper(v[j-1]) {
			return false
		}
	}
	return !notWords(bytes.Trim(v[:k], "_"))
}

// numberWithUnit reports whether v is a number and its unit (30s, 512MiB,
// 1.5GHz): a setting's value.
func numberWithUnit(v []byte) bool {
	k := 0
	for k < len(v) && (isDigit(v[k]) || v[k] == '.') {
		k++
	}
	return k > 0 && k < len(v) && len(v)-k <= 3 && allLetters(v[k:])
}

// byteList returns the end of a list of eight or more numbers at vs,
// [74, 37, …] or [0x4a, 0x25, …], written as brackets and commas: key
// material as a program prints its bytes; vs when there is none.
func byteList(src []byte, vs int) int {
	if vs >= len(src) || src[vs] != '[' {
		return vs
	}
	n := 0
	for j := vs + 1; j < len(src) && j-vs < 1024; j++ {
		switch c := src[j]; {
		case c == ']':
			if n < 8 {
				return vs
			}
			return j + 1
		case c == ',':
			n++
		case isHex(c) || c == 'x' || c == ' ':
		default:
			return vs
		}
	}
	return vs
}

// enumerated reports whether v is a setting's enumerated value, a word of
// capitals (GENERATE, AUTO, DISABLED, PAM, UE): no credential is written so.
func enumerated(v []byte) bool {
	if len(v) < 2 || len(v) > 16 {
		return false
	}
	for _, c := range v {
		if !(c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}

// maskCookies masks the values of the cookies of a Cookie or Set-Cookie
// header's value src[vs:ve] (sid=…; theme=…), not their names or a
// Set-Cookie's attributes (Path, Max-Age, SameSite); a value that names
// no cookie is masked whole.
func maskCookies(rw *rewriter, vs, ve int) {
	src := rw.src
	if bytes.IndexByte(src[vs:ve], '=') < 0 {
		rw.mask(vs, ve, kSecret)
		return
	}
	for s := vs; s < ve; {
		e := ve
		if k := bytes.IndexByte(src[s:ve], ';'); k >= 0 {
			e = s + k
		}
		if eq := bytes.IndexByte(src[s:e], '='); eq > 0 {
			name := bytes.TrimSpace(src[s : s+eq])
			if v := src[s+eq+1 : e]; !cookieAttributes[string(lowerASCII(name))] && len(v) > 0 && !angledWords(v) &&
				(!preference(v) || classifyKey(name) != kvNone) {
				rw.mask(s+eq+1, e, kSecret)
			}
		}
		s = e + 1
	}
}

// preference reports whether a cookie's value is a word of small letters
// (theme=dark, lang=en), a locale, a boolean or a consent's choices: a
// preference, unless the cookie's name names a credential.
func preference(v []byte) bool {
	return len(v) <= 12 && isLowerWord(v) || len(v) == 2 && v[0] >= 'a' && v[1] >= 'a' && allLetters(v) ||
		localeTag(v) || maskValue(v) || len(v) <= 24 && choices(v)
}

// localeTag reports whether v is a language and a region (en-GB, pt_BR).
func localeTag(v []byte) bool {
	return len(v) == 5 && v[0] >= 'a' && v[1] >= 'a' && (v[2] == '-' || v[2] == '_') && isUpper(v[3]) && isUpper(v[4]) &&
		allLetters(v[:2])
}

// choices reports whether v is words of small letters paired by ':' and
// listed by ',' (analytics:false,ads:true): a consent's choices.
func choices(v []byte) bool {
	if bytes.IndexByte(v, ':') <= 0 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c == ':' || c == ',' || c == '_') {
			return false
		}
	}
	return true
}

// cookieAttributes are the attributes of a Set-Cookie header.
var cookieAttributes = wordSet(`path domain expires max-age samesite secure httponly priority partitioned`)

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

func lowerASCII(b []byte) []byte {
	var buf [16]byte
	if len(b) > len(buf) {
		return nil
	}
	out := buf[:len(b)]
	for i, c := range b {
		out[i] = lower(c)
	}
	return out
}

// authEnd returns the end of the credentials of an authorization header
// value that starts at vs: the scheme and the one token after it, so that
// the sentence that follows stays; a scheme whose parameters are a list
// (Digest, AWS4-HMAC-SHA256) runs to the end of the value.
func authEnd(src []byte, vs int, quote byte) int {
	q := quote
	if q == '\\' {
		q = '"'
	}
	// The value's end (lineEnd) is found only when the value runs to it:
	// a line of many short values reads each once.
	end := func(from int) int {
		end := lineEnd(src, from, q)
		if quote == '\\' && end > vs && src[end-1] == '\\' {
			end--
		}
		return end
	}
	stop := func(i int) bool { // the value ends at i
		return i >= len(src) || valueStop(src, i, q) ||
			quote == '\\' && src[i] == '\\' && i >= vs && (i+1 == len(src) || valueStop(src, i+1, q))
	}
	word := func(i int) int { // the end of the word at i, within the value
		for !stop(i) && !isSpace(src[i]) {
			i++
		}
		return i
	}
	e := word(vs)
	val := src[vs:e]
	if stop(e) || bytes.IndexByte(val, ',') >= 0 || bytes.IndexByte(val, '=') >= 0 && !bytes.HasSuffix(val, []byte("=")) {
		return end(e) // one word, or parameters
	}
	if !schemeWord(val) {
		return e // no scheme: the word is the credential
	}
	// The word was the scheme: the credential is the next word.
	k := e
	for k < len(src) && src[k] == ' ' {
		k++
	}
	t := word(k)
	if bytes.IndexByte(src[k:t], '=') > 0 && bytes.IndexByte(src[k:t], ',') >= 0 || bytes.Contains(src[k:t], []byte("=\"")) {
		return end(t) // Digest username="…", realm="…"
	}
	for t > k && (src[t-1] == ',' || src[t-1] == ';' || src[t-1] == '.') {
		t--
	}
	return t
}

// valueStop reports whether src[i] ends a header value as lineEnd reads
// it: a line's end, or the value's closing quote.
func valueStop(src []byte, i int, quote byte) bool {
	c := src[i]
	return c == '\n' || c == '\r' || (quote != 0 && c == quote && src[i-1] != '\\') || (quote == 0 && (c == '"' || c == '\''))
}

// authParams reports whether an authorization value holds parameters
// rather than a credential: realm="…", error="…" (a challenge).
func authParams(v []byte) bool {
	return hasPrefixFold(v, "realm=") || hasPrefixFold(v, "error=")
}

// projectID reports whether v is shaped like a generated cloud project id
// (shop-prod-284913): lower-case letters, digits and dashes, a letter
// first, ending in a dash and at least four digits. A name such as
// checkout-v2 is a project's name, not its id.
func projectID(v []byte) bool {
	if len(v) < 6 || len(v) > 30 || !(v[0] >= 'a' && v[0] <= 'z') {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || isDigit(c) || c == '-') {
			return false
		}
	}
	d := bytes.LastIndexByte(v, '-')
	return d > 0 && len(v)-d-1 >= 4 && allDigits(v[d+1:])
}

// runtimeHosts are the names a container runtime or a cluster gives
// every installation for the machine itself or its own services: public
// knowledge, as localhost is.
var runtimeHosts = []string{"host.docker.internal", "gateway.docker.internal", "host.containers.internal",
	"host.testcontainers.internal", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}

// runtimeHost reports whether v is one of runtimeHosts, in any case.
func runtimeHost(v []byte) bool { return oneOfFold(v, runtimeHosts) }

// isLoopback reports whether v is a loopback or unspecified address.
func isLoopback(v []byte) bool {
	switch string(v) {
	case "127.0.0.1", "::1", "[::1]", "0.0.0.0":
		return true
	}
	return false
}

// opensStructure reports whether b, which starts with '[' or '{', opens a
// list or an object rather than a bracketed value ([s3cr3t]): a quote, a
// bracket or white space follows, or a key and ':' (YAML's {env: X}).
func opensStructure(b []byte) bool {
	switch b[1] {
	case '{', '[', '"', '\'', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	k := 1
	for k < len(b) && k < 48 && isKeyByte(b[k]) {
		k++
	}
	return b[0] == '{' && k > 1 && k+1 < len(b) && b[k] == ':' && b[k+1] == ' '
}

func hasDigit(b []byte) bool {
	for _, c := range b {
		if isDigit(c) {
			return true
		}
	}
	return false
}

// schemeWord reports whether w reads as an authorization scheme (Bearer,
// Basic, AWS4-HMAC-SHA256, GenieKey): letters, digits and dashes, a letter
// first, at most 24 bytes, and not mixed like a token.
func schemeWord(w []byte) bool {
	if len(w) == 0 || len(w) > 24 || !isAlpha(w[0]) {
		return false
	}
	for _, c := range w {
		if !isAlnum(c) && c != '-' {
			return false
		}
	}
	return !mixedClasses(w) || bytes.IndexByte(w, '-') > 0
}

// phraseKey reports whether a credential's key names a pass phrase (psk,
// wpa_passphrase, recoveryPhrase, mnemonic, seed), whose value is words
// with spaces between.
func phraseKey(key []byte) bool {
	for _, w := range phraseKeyEnds {
		if hasSuffixFold(key, w) {
			return true
		}
	}
	return false
}

// phraseKeyEnds are the ends of a pass phrase's key (phraseKey).
var phraseKeyEnds = []string{"psk", "passphrase", "phrase", "mnemonic", "seed"}

// phraseToLineEnd returns the end of a phrase key's unquoted value that
// runs to the end of its line: up to twelve words of letters and digits,
// and no other key, value or mark after it (psk=roses are red 1952). It
// returns vs when the line goes on otherwise.
func phraseToLineEnd(src []byte, vs int) int {
	e, words := vs, 1
	for e < len(src) && src[e] != '\n' && src[e] != '\r' && !(src[e] == '\\' && e+1 < len(src) && src[e+1] == 'n') {
		c := src[e]
		switch {
		case c == ' ':
			if words++; words > 12 || e+1 < len(src) && src[e+1] == ' ' {
				return vs
			}
		case !isAlnum(c) && c != '-' && c != '\'' && c != '!' && c != '.' && c != '?':
			return vs
		}
		e++
	}
	for e > vs && (src[e-1] == '.' || src[e-1] == ' ') {
		e--
	}
	if words < 2 {
		return vs
	}
	return e
}
