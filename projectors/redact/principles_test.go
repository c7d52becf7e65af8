package redact

import (
	"strings"
	"testing"
)

// In a credential's position a value is masked whatever its shape; what is
// provably no value (a reference, a call, a setting of the credential)
// stays.
func TestCredentialPositionsWinOverShape(t *testing.T) {
	expectRedacted(t, map[string]string{
		// A key names what its last words name.
		"brokerClientTlsKeyStorePassword=pony.cabin.2010": "brokerClientTlsKeyStorePassword=<SECRET>",
		`enable_password = "Stern714_";`:                  `enable_password = "<SECRET>";`,
		`{"password":"a1","password2":"Marble*Berg76"}`:   `{"password":"<SECRET>","password2":"<SECRET>"}`,
		"keyStorePath=/etc/broker/keystore.jks":           "keyStorePath=/etc/broker/keystore.jks",
		"mysql_auth_server_impl=static":                   "mysql_auth_server_impl=static",
		"max_tokens=4096 min_password=12":                 "max_tokens=4096 min_password=12",
		// A flag named for a credential is read by its name, in any shape.
		`Connect-VBRServer -Password "Olive.Sapphire36"`: `Connect-VBRServer -Password "<SECRET>"`,
		"hivemq-cli pub -pw daisy79 -t fleet":            "hivemq-cli pub -pw <SECRET> -t fleet",
		"mkdir -pv /srv/data":                            "mkdir -pv /srv/data",
		// A call yields the value; it holds none.
		"$settings['hash_salt'] = file_get_contents('/var/www/private/salt.txt');": "$settings['hash_salt'] = file_get_contents('/var/www/private/salt.txt');",
	})
}

// A phone number is masked in E.164 form wherever it stands, and in
// national form in the value of a key that names a phone; dates, versions,
// offsets, counts and ports are no phone numbers.
func TestPhoneNumbers(t *testing.T) {
	expectRedacted(t, map[string]string{
		`{"to":"+1 (415) 555-4359","body":"x"}`:                     `{"to":"<PHONE>","body":"x"}`,
		"POST /messaging to=+254778610287 status=queued":            "POST /messaging to=<PHONE> status=queued",
		`"contact":"+2348045055059"`:                                `"contact":"<PHONE>"`,
		"call +44 20 7946 0958 or +33 1 23 45 67 89.":               "call <PHONE> or <PHONE>.",
		`{"Name":"PhoneNumber","Value":254737300936}`:               `{"Name":"PhoneNumber","Value":<PHONE>}`,
		`"PhoneNumber":"254791997369","mobile":"0412 345 678"`:      `"PhoneNumber":"<PHONE>","mobile":"<PHONE>"`,
		"version 1.2.3+20261206 built 2026-12-06T12:01:02+0000":     "version 1.2.3+20261206 built 2026-12-06T12:01:02+0000",
		"UTC+05:30 +0000 sum +12 items, +1234567 bytes, +12345678x": "UTC+05:30 +0000 sum +12 items, +1234567 bytes, +12345678x",
		`"number":"20261206140011","order_number":"4412345678"`:     `"number":"20261206140011","order_number":"4412345678"`,
		"text=Your+total+is+12345678&phone=555":                     "text=Your+total+is+12345678&phone=555",
		"+1.2.3.4.5.6.7.8.9 and +0 (800) 1234-5678":                 "+1.2.3.4.5.6.7.8.9 and +0 (800) 1234-5678",
	})
}

// A number written as North America writes a phone's is one wherever it
// stands, with or without an area code: its groups and first digits tell
// it apart. Groups of other lengths or first digits, dates, ranges into a
// unit, and the number of a thing named before it stay.
func TestNorthAmericanPhones(t *testing.T) {
	expectRedacted(t, map[string]string{
		"SMS reminder to 555-0189: your bike is ready":          "SMS reminder to <PHONE>: your bike is ready",
		`"my number is 555-0192, call before the lesson"`:       `"my number is <PHONE>, call before the lesson"`,
		"customer (415) 555-3290 asked; fax (212)555-0143.":     "customer <PHONE> asked; fax <PHONE>.",
		`{"to":"415-555-3290","cc":"415.555.3291"}`:             `{"to":"<PHONE>","cc":"<PHONE>"}`,
		"order 412-0087 for subject 305-0019, ref 518-427-7301": "order 412-0087 for subject 305-0019, ref 518-427-7301",
		"kit 117-0032 built 2026-12-04, range 200-3000ms":       "kit 117-0032 built 2026-12-04, range 200-3000ms",
		"v555-0189 555-0189-22 555-0189/2 ISBN 978-0-306-40615": "v555-0189 555-0189-22 555-0189/2 ISBN 978-0-306-40615",
		"lot 105-5555 at 12:30:45, 155.555.1212.4":              "lot 105-5555 at 12:30:45, 155.555.1212.4",
	})
}

// A key that names a lock or what opens one holds its code, when the value
// is shaped as a code (digits, grouped or with a letter or two): glued
// (doorcode, gatepin) as two words (door_code) are. A state, a name or a
// count there is no code, nor is a code glued to no lock's name.
func TestLockKeys(t *testing.T) {
	expectRedacted(t, map[string]string{
		"C-2291;keysafe=1964;access=06:00-22:00":                 "C-2291;keysafe=<SECRET>;access=06:00-22:00",
		`{"lockbox":"2210","doorcode":"1492#","n":1}`:            `{"lockbox":"<SECRET>","doorcode":"<SECRET>","n":1}`,
		"x;combo=31-07-88 gatepin=K-4417 alarmcode=1122A.":       "x;combo=<SECRET> gatepin=<SECRET> alarmcode=<SECRET>.",
		"lockbox=installed padlock=true combination=3-of-5":      "lockbox=installed padlock=true combination=3-of-5",
		"key_code=65 keycode=1065 barcode=5977886 zipcode=90210": "key_code=65 keycode=1065 barcode=5977886 zipcode=90210",
	})
}

// A person's name after a noun for whom a record serves may start with
// an initial (client J. Morales), as after a title it may.
func TestNameWithAnInitial(t *testing.T) {
	expectRedacted(t, map[string]string{
		"bed assigned: client J. Morales bed 12B":        "bed assigned: client <USER> bed 12B",
		`{"customer":"J. Doe","id":4}`:                   `{"customer":"<USER>","id":4}`,
		"client A. Team member, Section B. Introduction": "client A. Team member, Section B. Introduction",
	})
}

// A key named for whom a record serves holds a person's name as a JSON
// member does (contact="Maureen Pike"), whose family name may be a word
// of the dictionary; a key that only ends in such a noun, or a thing's
// name, is not one.
func TestServedKeyNames(t *testing.T) {
	expectRedacted(t, map[string]string{
		`list=GOTV-3 contact="Maureen Pike" result=supporter`: `list=GOTV-3 contact="<USER>" result=supporter`,
		`{"contact":"Maureen Pike","n":1}`:                    `{"contact":"<USER>","n":1}`,
		`x_contact="Maureen Pike" contact="Support Team"`:     `x_contact="Maureen Pike" contact="Support Team"`,
	})
}

// A password that ends the clause after its word, "for" and what it opens
// is the password, quoted or not; a clause that goes on, or ends, after
// the place has none.
func TestPasswordAfterItsPlace(t *testing.T) {
	expectRedacted(t, map[string]string{
		"digitiser web UI password for station KOTA P-wave-Arrival8": "digitiser web UI password for station KOTA <SECRET>",
		`private; viewing password for family "grandpa-joe-1931"`:    `private; viewing password for family "<SECRET>"`,
		"reset the password for db-01 (ticket OPS-42)":               "reset the password for db-01 (ticket OPS-42)",
		"password for the VPN portal changed, see KB-1042.":          "password for the VPN portal changed, see KB-1042.",
		"password for release v2.3.1-rc4; password for all of them":  "password for release v2.3.1-rc4; password for all of them",
	})
}

// A value announced in prose by a credential word and a connecting word
// or a colon is masked: a code or a PIN of four to eight digits, a word
// shaped like a password, PowerShell's secure string literal. Counts,
// codes of errors and exits, notes and references are no values.
func TestAnnouncedValues(t *testing.T) {
	expectRedacted(t, map[string]string{
		"Your verification code is 883440. Do not share it.":                        "Your verification code is <SECRET>. Do not share it.",
		"M-PESA PIN entered for 1003 was 9208, transaction reversed":                "M-PESA PIN entered for 1003 was <SECRET>, transaction reversed",
		"Voicemail PIN for 1003 changed to 407492":                                  "Voicemail PIN for 1003 changed to <SECRET>",
		`{"body":"Door code 6087 is active"} "Your code: 980488"`:                   `{"body":"Door code <SECRET> is active"} "Your code: <SECRET>"`,
		"Your one-time passcode is 550322":                                          "Your one-time passcode is <SECRET>",
		"text=Your+PIN+is+4671&x=1":                                                 "text=Your+PIN+is+<SECRET>&x=1",
		"server password changed to: Ventana559%":                                   "server password changed to: <SECRET>",
		"monitor_password changed from 'monitor' to 'Crystal_kiwi2'":                "monitor_password changed from 'monitor' to '<SECRET>'",
		"Password for svc@example.com: ribbon.pine.2004":                            "Password for <EMAIL>: <SECRET>",
		"-Password (ConvertTo-SecureString 'candle.katze.2002' -AsPlainText)":       "-Password (ConvertTo-SecureString '<SECRET>' -AsPlainText)",
		`ConvertTo-SecureString -String "delta gravel cricket" -AsPlainText -Force`: `ConvertTo-SecureString -String "<SECRET>" -AsPlainText -Force`,
		"group invite code nl32n59t issued for clan Night Owls":                     "group invite code <SECRET> issued for clan Night Owls",
		"GET /callback?code=4f9a2Kx7Qz&state=ok code: \"3310\"":                     "GET /callback?code=<SECRET>&state=ok code: \"<SECRET>\"",
		// No values.
		"your code is 512MiB, invite code v2 ready, invite code abcdefgh": "your code is 512MiB, invite code v2 ready, invite code abcdefgh",
		"error code is 1234, exit code 2048, status code was 5031":        "error code is 1234, exit code 2048, status code was 5031",
		"password length is 12345678; PIN retries are 3":                  "password length is 12345678; PIN retries are 3",
		"Password for repository is not set, using default":               "Password for repository is not set, using default",
		"password: ((docker.password)) and password is ${DB_PASSWORD}":    "password: ((docker.password)) and password is ${DB_PASSWORD}",
		"the PIN pad is ready. Order 20261206 was shipped to 1234":        "the PIN pad is ready. Order 20261206 was shipped to 1234",
		"PIN verification at 12:30:45 was 2026-12-06":                     "PIN verification at 12:30:45 was 2026-12-06",
	})
}

// A user name after a user word is personal, quoted or not; an account
// named for its role is public; a key, a mask or a placeholder after the
// word is no name. A name in a reserved or conventional internal zone is
// a host's.
func TestPersonalAndInternalNames(t *testing.T) {
	expectRedacted(t, map[string]string{
		`Login permitted to inside:ssh for user "zjankowski"`:  `Login permitted to inside:ssh for user "<USER>"`,
		"auth-success User 'fjankowski' authenticated.":        "auth-success User '<USER>' authenticated.",
		"pg.user=admin activemq.username=system --username ci": "pg.user=admin activemq.username=system --username ci",
		`username="guest" default-user = ops`:                  `username="guest" default-user = ops`,
		`AUTH user="<unknown>" : user = ***** : user IP = ***`: `AUTH user="<unknown>" : user = ***** : user IP = ***`,
		"user=bnovak42 --username ihalvorsen":                  "user=<USER> --username <USER>",
		"ssl://mq-stg-13.ops.home.arpa:61617 and nas.home":     "ssl://<HOST>:61617 and <HOST>",
	})
}

// A reference says where a secret comes from, in any of its forms, and
// stays.
func TestReferenceForms(t *testing.T) {
	expectKept(t,
		`password = "$ENV{RSPAMD_CONTROLLER_PASSWORD}";`,
		`<param name="password" value="$${default_password}"/>`,
		`root_password: "%{lookup('vault_mysql_root')}"`,
		"tokenSecretKey=file:///pulsar/secrets/secret.key",
		`Password = "@/etc/bacula/operator.pw";`,
		// A constant's name in capitals, or a placeholder of words.
		"&relay_cfg smtp_pass=SMTP_PASS_FROM_VAULT, /",
		"client_secret = OAUTH_CLIENT_SECRET",
		"password = replace_me",
		`"api_key": "your-api-key-here"`,
		// A credential's name and a reference as its value, in a call.
		`iocEnvSet("ARCHIVER_DB_PASSWORD", "$(ARCHIVER_PW)")`,
		`define('DB_PASSWORD', getenv('DB_PASSWORD'));`,
		// A PowerShell cmdlet yields the value.
		`$pw = Read-Host -AsSecureString "Enter the password"`,
		`$apiKey = Get-Content C:\ops\api.key`,
		// A store named by its prefix: the environment, a keyring,
		// 1Password.
		`api_key = "env:BERMTIMER_FED_KEY"`,
		"DB_PASSWORD=op://prod/db/password",
		// The program that keeps a credential, after its word.
		"secret_manager=aws-secretsmanager password_manager=keepassxc",
		// Words joined are a name, which no generated session or token is.
		"wristband colour=orange session=toddler-hour token=refresh-token",
	)
	// Capitals with digits, one capital word, or words of both cases are
	// values.
	for _, in := range []string{"password=HELLO_WORLD_2", "password=Replace_Me", "password=red_fox_jumps", "password = Get-Lost99x",
		"session=qzxv-kwpt", "password=toddler-hour", "POS manager code 84033 used",
		`$password = ConvertTo-SecureString "Tr0ub4dor&3" -AsPlainText -Force`} {
		if got := String(in); got == in {
			t.Errorf("%q kept", in)
		}
	}
}

// More syntaxes of a credential's position: an Erlang binary, a directive
// at the start of a line, the noun repeated after its keyword, an element
// of any name's length, key material as a list of bytes; a pass phrase is
// a person's whatever key material its key names first. An enumerated
// setting is no value, nor is a URL after a keyword.
func TestCredentialSyntaxes(t *testing.T) {
	expectRedacted(t, map[string]string{
		`auth_on_register:201 password=<<"granite.plum.1991">>`:               `auth_on_register:201 password=<<"<SECRET>">>`,
		"DEFAULT PASSWORD\tE0vH8i+-@h{koaQ":                                   "DEFAULT PASSWORD\t<SECRET>",
		" key Molasses+Cricket16":                                             " key <SECRET>",
		"the key Molasses+Cricket16 is used":                                  "the key Molasses+Cricket16 is used",
		"authentication pre-shared-key key quartz.arbor.1983":                 "authentication pre-shared-key key <SECRET>",
		"snmp-server host inside 192.0.2.1 community poppy87 version 2c":      "snmp-server host inside <IP> community <SECRET> version 2c",
		"<private-key-password>Orbit!Basil11</private-key-password>":          "<private-key-password><SECRET></private-key-password>",
		`hiera_eyaml::private_key_passphrase: "radish violet juniper tomato"`: `hiera_eyaml::private_key_passphrase: "<SECRET>"`,
		"network_key: [74, 37, 61, 231, 81, 21, 210, 75, 84, 193, 16, 136]":   "network_key: <SECRET>",
		"Network key: [0x4a, 0x25, 0x3d, 0xe7, 0x51, 0x15, 0xd2, 0x4b, 0x54]": "Network key: <SECRET>",
		"network_key: GENERATE, ports: [1, 2, 3]":                             "network_key: GENERATE, ports: [1, 2, 3]",
		`api_key_hint: "put your key here"`:                                   `api_key_hint: "put your key here"`,
		"see the [community handbook](https://example.org/handbook)":          "see the [community handbook](https://example.org/handbook)",
		"rotate the token (https://example.org/docs/rotation) weekly":         "rotate the token (https://example.org/docs/rotation) weekly",
	})
}

// Accounts and their passwords in the lines that hold them: a realm
// file's line, a list of user:pass pairs, a here-string on a password
// flag, the account a login or a connection names after "as", a password
// hash in the modular crypt format.
func TestAccountsAndPasswordsInTheirLines(t *testing.T) {
	expectRedacted(t, map[string]string{
		"admin=Stern604%,admin":                                         "admin=<SECRET>,admin",
		"bnovak: cactus.chat.1984, admin, user":                         "<USER>: <SECRET>, admin, user",
		"level=Warn5,file=x":                                            "level=Warn5,file=x",
		"timeout: 30s, retries":                                         "timeout: 30s, retries",
		`json:"cssKeyframesRules,omitempty,omitzero"`:                   `json:"cssKeyframesRules,omitempty,omitzero"`,
		`tag: 'retryPolicy,omitempty', default`:                         `tag: 'retryPolicy,omitempty', default`,
		"on: [pull_request, push, release]":                             "on: [pull_request, push, release]",
		"Stages: []stage.Step{buildStep, testStep}":                     "Stages: []stage.Step{buildStep, testStep}",
		`bnovak: "cactus.chat.1984", admin`:                             `<USER>: <SECRET>, admin`,
		"ADD_LOCAL_USER=admin:Hazel-Anchor17,viewer:Shadow-f59":         "ADD_LOCAL_USER=<SECRET>",
		"ipa user-add svc --password <<< 'GOB_sapphire_15'":             "ipa user-add svc --password <<< '<SECRET>'",
		"INFO apicaller connected to 192.0.2.125:17070 as dmwangi":      "INFO apicaller connected to <IP> as <USER>",
		"saved as report.txt; logged in as root":                        "saved as report.txt; logged in as root",
		"new hash $6$TbX4NgG7gvfUAYUt$GLNsm1amHU7XfK0gr2SJUQyqxgoKbzQG": "new hash <SECRET>",
		"echo $HOME$PATH and $a$b$c and cost $5":                        "echo $HOME$PATH and $a$b$c and cost $5",
	})
}

// An image's repository before its digest is public, whatever its names
// look like; the same name elsewhere is judged as any value.
func TestImageRepositoryBeforeItsDigest(t *testing.T) {
	in := "image: ghcr.io/koenkk/zigbee2mqtt@sha256:ae5bfee3be94b503b6c05b0d2756d1289ab88fcb228842b91759a91fa85f3ea3"
	if got := String(in); got != in {
		t.Errorf("%q:\n got  %q", in, got)
	}
	if got := String("token ghcr.io/xK9qPz2mW7vR4tLn8sJ"); got == "token ghcr.io/xK9qPz2mW7vR4tLn8sJ" {
		t.Errorf("a generated value without a digest after it kept: %q", got)
	}
}

// What stands in a credential's or an identity's position but is no value
// keeps its words: prose after a colon (a word, then grammar, or a
// sentence of one capitalised word), a field's name, a call that wraps
// a reference, a documentation name or a kind of server after a host key,
// a word of a string after a login verb.
func TestNoValueInAPosition(t *testing.T) {
	expectKept(t,
		"rspamd_controller_handle_auth: authentication succeeded",
		"User[deploy]/password: changed [redacted] to [redacted]",
		`modparam("auth_db", "password_column", "password")`,
		"activemq.password=ENC(${ACTIVEMQ_PW})",
		"postgres.host = db.example.com ; server = RADIUS",
		`{"msg":"password reset requested","user_id":18842}`,
		"Hostname: Required. Hostname of the database to connect to.",
		"Server: Address or name of the backup server",
		"node: the peers of this node are listed first",
		"ApiToken: Optional. Token of the page to read next",
		"Uid: Output only. The unique identifier of the run.",
		"Authorization: Grants user access to the cluster.",
	)
	expectRedacted(t, map[string]string{
		"auth: Tr0ub4dor&3 next":       "auth: <SECRET> next",
		"password: hunter2 (rotated)":  "password: <SECRET> (rotated)",
		"password: Bramble7 for ops":   "password: <SECRET> for ops",
		"Password: Wintergreen. Next":  "Password: <SECRET> Next",
		"db.host = pg-7.fjordbank.net": "db.host = <HOST>",
		`define("AUTH_KEY", "k9Xp2")`:  `define("AUTH_KEY", "<SECRET>")`,
	})
}

// An address in brackets after a name is the name's address, as postfix
// writes a client; a subscript of digits or a word is none.
func TestAddressInBracketsAfterAName(t *testing.T) {
	expectRedacted(t, map[string]string{
		"postfix/smtpd[2231]: client=unknown[10.140.224.217], sasl_method=PLAIN": "postfix/smtpd[<PID>]: client=unknown<IP>, sasl_method=PLAIN",
		"matrix[1.5] = x; os.environ[HOME]; ver[1.2.3.4b]":                       "matrix[1.5] = x; os.environ[HOME]; ver[1.2.3.4b]",
	})
}

// A value fed to the input of a command that reads a password there is
// one; what is fed to another command is not.
func TestPasswordsFedToInput(t *testing.T) {
	expectRedacted(t, map[string]string{
		"echo 'ops:Amberwillow5!' | chpasswd":                         "echo '<SECRET>' | chpasswd",
		"echo 'Summit1977#' | iinit":                                  "echo '<SECRET>' | iinit",
		"echo velvet-unicorn-235 | /usr/sbin/saslpasswd2 -p -c alice": "echo <SECRET> | /usr/sbin/saslpasswd2 -p -c alice",
		"echo $TOKEN | docker login --password-stdin -u ci":           "echo $TOKEN | docker login --password-stdin -u ci",
		"sshfs box:/b /mnt -o password_stdin <<< 'Gadget1'":           "sshfs box:/b /mnt -o password_stdin <<< '<SECRET>'",
		"echo 'hello world' | grep hello; cat <<< 'x y'":              "echo 'hello world' | grep hello; cat <<< 'x y'",
	})
}

// A Redactor reused on ordinary lines that its passes read word by word
// allocates nothing once its buffers have grown.
func TestRedactorDoesNotAllocatePerWord(t *testing.T) {
	r := New()
	line := []byte("your verification code is ready; PIN retries are 3; password for repository is not set; door code " +
		"changed to blue; echo hello | grep x; user=postgres; ssh -p 2222 admin@example.com")
	buf := r.Append(nil, line)
	if n := testing.AllocsPerRun(50, func() { buf = r.Append(buf[:0], line) }); n > 0 {
		t.Errorf("%.0f allocations per line", n)
	}
}

// One list of English words tells prose from names for every pass: a word
// of it is prose, unless it names an account's role.
func TestProseWordsAreOneList(t *testing.T) {
	for w, want := range map[string]bool{"dashboard": true, "unknown": true, "the": true, "admin": false, "jdoe": false, "failed": true} {
		if got := proseWord([]byte(w)); got != want {
			t.Errorf("proseWord(%q) = %v", w, got)
		}
	}
}

// A password after its scheme in braces, as LDAP and Dovecot store it, and
// a password-shaped word after "auth" are secrets; a template's name in
// braces, a variable in ${} and prose after "auth" are not.
func TestSchemesAndAuth(t *testing.T) {
	expectRedacted(t, map[string]string{
		"ops:{PLAIN}yellow-unicorn-636::::::":             "ops:{PLAIN}<SECRET>::::::",
		"entry alice {CRYPT}Summer2024 1000":              "entry alice {CRYPT}<SECRET> 1000",
		"see ${GOPATH}/src/app and zsysnum_${GOOS}.go":    "see ${GOPATH}/src/app and zsysnum_${GOOS}.go",
		"# smtp auth D0lphin.ferry3":                      "# smtp auth <SECRET>",
		"url={HOST}:8080/{ID} and auth failure for alice": "url={HOST}:8080/{ID} and auth failure for alice",
		"the user interface of auth v8.29.9 is faster":    "the user interface of auth v8.29.9 is faster",
	})
}

// A message logged on one line breaks its lines with escapes: a key after
// an escaped line break is read without the escape's letter.
func TestKeyAfterEscapedBreak(t *testing.T) {
	expectRedacted(t, map[string]string{
		`[DNC]\nmachine=HAAS\npassword=saff738@`:              `[DNC]\nmachine=HAAS\npassword=<SECRET>`,
		`[db]\tpassword = "Seaweed!Kelp7"`:                    `[db]\tpassword = "<SECRET>"`,
		`"pool-3" tid=259315 nid=0x1a2b waiting on condition`: `"pool-3" tid=<PID> nid=0x1a2b waiting on condition`,
	})
}

// A credential noun glued to a word or an abbreviation before it names a
// credential (dbpass, ADMPWD, smtppass, motdepasse); a word of its own
// that ends in one does not (bypass).
func TestGluedCredentialNouns(t *testing.T) {
	expectRedacted(t, map[string]string{
		"$CFG->dbpass    = 'breeze2002';":              "$CFG->dbpass    = '<SECRET>';",
		"HS_ADMPWD=chilli2020":                         "HS_ADMPWD=<SECRET>",
		"define('DBPASS','Velvet643');":                "define('DBPASS','<SECRET>');",
		`wlan "Staff" psk="StaffWifi2024"`:             `wlan "Staff" psk="<SECRET>"`,
		"motdepasse_tablette_cockpit: Granite-garnet6": "motdepasse_tablette_cockpit: <SECRET>",
		"bypass=Volume7b compass=North3x":              "bypass=Volume7b compass=North3x",
	})
}

// A word is no value, in any language: letters of one case, or a capital
// and small letters, are not generated, and a byte of a non-ASCII letter
// is a letter, not a symbol that would make a word read as a password.
func TestWordsInAnyLanguage(t *testing.T) {
	expectRedacted(t, map[string]string{
		"Anmeldung fehlgeschlagen: Benutzername oder Kennwort falsch":              "Anmeldung fehlgeschlagen: Benutzername oder Kennwort falsch",
		"Kennwort geändert am 2026-11-17 – nächste Änderung in 296 Tagen":          "Kennwort geändert am 2026-11-17 – nächste Änderung in 296 Tagen",
		"Mot de passe oublié ? Le lien de réinitialisation expire dans 24 heures.": "Mot de passe oublié ? Le lien de réinitialisation expire dans 24 heures.",
		"Kennwort Straße2024!":   "Kennwort <SECRET>",
		"session=kPq7ZrT2mWx9Lb": "session=<SECRET>",
	})
}

// A value is announced in the languages of its credential words, a code by
// any word of its own before it, and a pass phrase of small words after a
// colon; an account and its password are announced as NAME / PASS after a
// word of accounts. A setting word ends an announcement only next to its
// credential word.
func TestAnnouncedInMoreForms(t *testing.T) {
	expectRedacted(t, map[string]string{
		"Contraseña del controlador de riego: rust222!":                     "Contraseña del controlador de riego: <SECRET>",
		"Mot de passe du coffre des pièces: walnut juniper harbor saffron":  "Mot de passe du coffre des pièces: <SECRET>",
		"Ticket#10442 internal note: door code for the server room is 3016": "Ticket#10442 internal note: door code for the server room is <SECRET>",
		"asked for the pharmacy cabinet code 96613319":                      "asked for the pharmacy cabinet code <SECRET>",
		"aspace login: admin / Juniperheron79#":                             "aspace login: admin / <SECRET>",
		"e-filing portal credentials are jmarlow / lilac-nectar-barley7":    "e-filing portal credentials are <USER> / <SECRET>",
		"WebUI login admin / 1423":                                          "WebUI login admin / <SECRET>",
		// No value: codes of errors and closes, prose, a login's outcome.
		"failed with code 1001, error code 1032":        "failed with code 1001, error code 1032",
		"password length is 12, code TTL is 3600":       "password length is 12, code TTL is 3600",
		"see account / settings for the login / logout": "see account / settings for the login / logout",
		"Password: must be at least twelve characters":  "Password: must be at least twelve characters",
	})
}

// The symbols at a password's end, a colon after a parenthesis, a change
// "from" one value "to" another, and a here-string fed to a command of
// the line named for a password.
func TestPasswordsAnnouncedAndFed(t *testing.T) {
	expectRedacted(t, map[string]string{
		"Wachtwoord beregeningscomputer: otte653@":                                    "Wachtwoord beregeningscomputer: <SECRET>",
		"guest master password (do not share): Emberrustle19*":                        "guest master password (do not share): <SECRET>",
		"admin password changed from Ledger1! to 1971-11-12":                          "admin password changed from <SECRET> to <SECRET>",
		"mysql-monitor_password changed from 'monitor' to 'Crystal_kiwi235'":          "mysql-monitor_password changed from 'monitor' to '<SECRET>'",
		"[smb] smbpasswd -a scanner -s <<< Cinnamon.Toast.88":                         "[smb] smbpasswd -a scanner -s <<< <SECRET>",
		"VBoxManage controlvm fin addencpassword fin - <<< 'Tr0ub4dor&3'":             "VBoxManage controlvm fin addencpassword fin - <<< '<SECRET>'",
		"mail to alice@ and bob@ sent; cat <<< 'hello world' | wc -w; go from A to B": "mail to alice@ and bob@ sent; cat <<< 'hello world' | wc -w; go from A to B",
	})
}

// A code is read in groups and in lists, a voucher is one, and a key is
// announced after its qualifier; letters whose case changes inside as no
// word's does are a code's too.
func TestCodesInGroupsAndLists(t *testing.T) {
	expectRedacted(t, map[string]string{
		"password accepted, MFA recovery code e5us-36tm":                        "password accepted, MFA recovery code <SECRET>",
		"2FA recovery codes for admin: 7z8z-qgwu eg4t-ttxr kkdr-dp2n":           "2FA recovery codes for admin: <SECRET> <SECRET> <SECRET>",
		"captive portal voucher 5tqi3ibl redeemed":                              "captive portal voucher <SECRET> redeemed",
		"Omada open API key xxCM96rjYEm issued":                                 "Omada open API key <SECRET> issued",
		"invite code tBLlCxWGh put on tube onboarding":                          "invite code <SECRET> put on tube onboarding",
		"release code 2026-12-06, primary key 1234, exit code 1, code OpenAPI":  "release code 2026-12-06, primary key 1234, exit code 1, code OpenAPI",
		"recovery codes 9dd6-y8ha 42ws-5u2k qynj-zfrz":                          "recovery codes <SECRET> <SECRET> <SECRET>",
		"backup codes 12345678 87654321 abcdefgh":                               "backup codes <SECRET> <SECRET> abcdefgh",
		"pairing PIN 6583 for section A, 0475 for section B":                    "pairing PIN <SECRET> for section A, <SECRET> for section B",
		"PIN 1234 set, 2026 rules apply; door code 4471 for the back, 12 doors": "PIN <SECRET> set, 2026 rules apply; door code <SECRET> for the back, 12 doors",
	})
}

// A code written in groups of one length, mixing letters and digits, is
// generated wherever it stands; a name's parts, a date and words are not.
func TestCodesInEqualGroups(t *testing.T) {
	expectRedacted(t, map[string]string{
		"lane camera stream key wrjn-a505-1fyn-jmoa (private)": "lane camera stream key <SECRET> (private)",
		"paired as K7QD-2MXA-P9ZT on the console":              "paired as <ID> on the console",
		"image tag v2-rc1-b4c5 pushed, room A1-B2-C3 booked":   "image tag v2-rc1-b4c5 pushed, room A1-B2-C3 booked",
		"build emqx-5.8.3-debian12-amd64 shipped 2026-12-07":   "build emqx-5.8.3-debian12-amd64 shipped 2026-12-07",
		"route blue-moon-tide-fern and area a1b2-c3d4 done":    "route blue-moon-tide-fern and area a1b2-c3d4 done",
	})
}

// What a code opens names the code: a padlock, a lockbox, lockers, a
// device paired by passkey.
func TestCodesNamedByWhatTheyOpen(t *testing.T) {
	expectRedacted(t, map[string]string{
		`host notes "balloon van padlock 5492"`:                  `host notes "balloon van padlock <SECRET>"`,
		"changing-room lockers reset to 5276":                    "changing-room lockers reset to <SECRET>",
		"tablet paired, bluetooth passkey 088856":                "tablet paired, bluetooth passkey <SECRET>",
		"locker 12 assigned to the lockbox team, padlock icon":   "locker 12 assigned to the lockbox team, padlock icon",
		"reservation hold yhNkiVbA released after timeout":       "reservation hold <ID> released after timeout",
		`client door code "Dune$1995" (from remarks)`:            `client door code "<SECRET>" (from remarks)`,
		"invite code OIZSBLUP sent; auth code EXPIRED":           "invite code <SECRET> sent; auth code EXPIRED",
		`error code "E-1001" returned, gate code "v2.1" noted`:   `error code "E-1001" returned, gate code "v2.1" noted`,
		"getXYZValue on macOS, iPhone, eBay, McDonald's, GitHub": "getXYZValue on macOS, iPhone, eBay, McDonald's, GitHub",
	})
}

// A wireless network's key is a pass phrase, quoted or not; a memorable
// answer is a security answer; an account by its e-mail address and its
// password after " / ".
func TestNetworkKeysAnswersAndPairs(t *testing.T) {
	expectRedacted(t, map[string]string{
		`ball-machine wifi "Dinker-02" WPA key duchess azure oboe prairie regent`:  `ball-machine wifi "Dinker-02" WPA key <SECRET>`,
		`depot wifi "Garage-Guests" psk set to "sleet russet eclipse sleet"`:       `depot wifi "Garage-Guests" psk set to "<SECRET>"`,
		`online banking memorable answer "Aunt Gideon"`:                            `online banking memorable answer "<SECRET>"`,
		"secretary login wren@pinfold.test / FalconGarden^%":                       "secretary login <EMAIL> / <SECRET>",
		`WPA key rotation is monthly; password changed to "please use the portal"`: `WPA key rotation is monthly; password changed to "please use the portal"`,
	})
}

// An account named for its role or for a service is public: a word of
// prose, or a name with a part that names a service or a role.
func TestRoleAccounts(t *testing.T) {
	expectRedacted(t, map[string]string{
		`Add-VBRCredentials -User "CORP\svc-veeam" -Password (Get-Secret -Name VeeamSvc)`: `Add-VBRCredentials -User "CORP\svc-veeam" -Password (Get-Secret -Name VeeamSvc)`,
		"radosgw-admin user info --uid=billing --format=json":                             "radosgw-admin user info --uid=billing --format=json",
		"koha: SIP2 login failed for user sipuser (attempt 1 of 5)":                       "koha: SIP2 login failed for user sipuser (attempt 1 of 5)",
		"invalid credentials for uid=reception":                                           "invalid credentials for uid=reception",
		"Logging in user 'nw_builder' to Steam Public...OK":                               "Logging in user 'nw_builder' to Steam Public...OK",
		"login failed for user jmarlow, uid=hanaj":                                        "login failed for user <USER>, uid=<USER>",
	})
}

// Public forms: an ssh fingerprint whose base64 ends in '+' before a
// full stop, a key id in gpg's colon listing, whose runs of colons are
// fields and no IPv6 address.
func TestPublicFormsAtTheirEdges(t *testing.T) {
	expectKept(t,
		"The ED25519 key fingerprint is SHA256:QnlRU5yC0+mrSN9xWm3Y0/YffXC3wVZuGQbQKbCrPE+.",
		"pub:u:4096:1:C43CF00E06A780F9:1740787200:1835395200::u:::scESC::::::23::0:",
	)
	expectRedacted(t, map[string]string{
		"token QnlRU5yC0+mrSN9xWm3Y0/YffXC3wVZuGQbQKbCrPE+.": "token <SECRET>.",
		"peer fe80::23 and tcp:fe80::1 up":                   "peer <IP> and tcp:<IP> up",
	})
}

// A short flag's value may be attached in quotes (-p'x'); a password of
// digits and '/' is a date, not a path.
func TestQuotedAttachedFlagAndDatePassword(t *testing.T) {
	expectRedacted(t, map[string]string{
		"mysql -u app -p'squire.beacon^0' -h 10.1.2.3 live": "mysql -u app -p'<SECRET>' -h <IP> live",
		`mariadb -p"Fern-Oak-44" shop`:                      `mariadb -p"<SECRET>" shop`,
		"driver login passwd2=17/08/1994 result=ok":         "driver login passwd2=<SECRET> result=ok",
		"mkdir -p'logs'; password_file=ops/db/password":     "mkdir -p'logs'; password_file=ops/db/password",
	})
}

// A long flag may be written with one dash (-passwd-expiry-time): it is
// no short flag with its value attached; a bound glued to its setting
// (minlength) bounds it; and after a verb that is prose too, the word
// after a flag is the flag's value, not an account or a password.
func TestFlagsOfOneDash(t *testing.T) {
	expectRedacted(t, map[string]string{
		"security login role config modify -role admin -passwd-minlength 10 -passwd-expiry-time 90":            "security login role config modify -role admin -passwd-minlength 10 -passwd-expiry-time 90",
		"cluster1::> security login show -user-or-group-name svc_snap -fields authentication-method,is-locked": "cluster1::> security login show -user-or-group-name svc_snap -fields authentication-method,is-locked",
		"mysql -uroot -pS3cr-et1 db":                     "mysql -uroot -p<SECRET> db",
		"steamcmd +login nw_user daisy-pebble-943 +quit": "steamcmd +login <USER> <SECRET> +quit",
	})
}

// What stands in a position but is provably no value stays: a word of
// capitals, a call named with '!', a preference in a cookie, a sentence
// written as one word, the colon of the sentence after a value, a
// setting of the credential after its word.
func TestNoValueInMorePositions(t *testing.T) {
	expectRedacted(t, map[string]string{
		"login = PAM": "login = PAM",
		"INFO: Removed Session: UE count 14, sessions 17":       "INFO: Removed Session: UE count 14, sessions 17",
		`secret_key_base: System.fetch_env!("SECRET_KEY_BASE")`: `secret_key_base: System.fetch_env!("SECRET_KEY_BASE")`,
		"Set-Cookie: theme=dark; Path=/; SameSite=Lax":          "Set-Cookie: theme=dark; Path=/; SameSite=Lax",
		"Set-Cookie: session=abcdef; Path=/":                    "Set-Cookie: session=<SECRET>; Path=/",
		"PASSWORD=changeme-is-not-allowed: validation error":    "PASSWORD=changeme-is-not-allowed: validation error",
		"PASSWORD=Ox7!pw: validation error":                     "PASSWORD=<SECRET>: validation error",
		"pin_length=6 pin_alphabet=digits":                      "pin_length=6 pin_alphabet=digits",
		"auth: Warning: Password scheme SSHA256 is deprecated":  "auth: Warning: Password scheme SSHA256 is deprecated",
		"password=correct-horse-battery-staple":                 "password=<SECRET>",
	})
}

// A run of hex pairs joined by colons is one value: its tail is no pgpass
// line's account and password.
func TestColonFingerprintIsNoPgpassLine(t *testing.T) {
	in := "Certificate fingerprint (SHA-256): 82:D0:A5:3C:38:FE:35:C7:D0:94:AE:2F:48:AC:7E:A7:A7:16:BB:3F:86:0D:1E:26:5F:30:7D:FD:56:FB:C0:AC"
	if got := String(in); got != in {
		t.Errorf("%q:\n got %q", in, got)
	}
	if got, want := String("db01:5432:orders:alice:Ox7!pw"), "db01:5432:orders:<USER>:<SECRET>"; got != want {
		t.Errorf("pgpass line: got %q, want %q", got, want)
	}
}

// Commands that register, create or connect an account take its password
// as the argument after it, or as user:password before the host.
func TestAccountCommands(t *testing.T) {
	expectRedacted(t, map[string]string{
		"xo-cli register --au https://xo.example jdoe@example.com Sunflower#1987": "xo-cli register --au https://xo.example <USER> <SECRET>",
		"tarantoolctl connect admin:Tiger-walrus241@172.18.215.216:3301":          "tarantoolctl connect <SECRET>@<IP>",
		"connect to db01 timeout 30s":                                             "connect to db01 timeout 30s",
	})
}

// A key ending in "code" names a secret unless a word of prose, of a
// setting or of public codes names the code, as in prose.
func TestCodeKeys(t *testing.T) {
	expectRedacted(t, map[string]string{
		`{"gate_code":"39731368","emergency_code":"l5b12ntm7q"}`:                          `{"gate_code":"<SECRET>","emergency_code":"<SECRET>"}`,
		`{"error_code":"E1032","country_code":"KE","status_code":200,"zip_code":"94107"}`: `{"error_code":"E1032","country_code":"KE","status_code":200,"zip_code":"94107"}`,
	})
}

// An element named for a credential by its key or name attribute holds
// the credential as its text.
func TestElementNamedByItsAttribute(t *testing.T) {
	expectRedacted(t, map[string]string{
		"<entry key='database.password'>Pr@irie257</entry>":  "<entry key='database.password'><SECRET></entry>",
		`<property name="smtp.password">lantern9</property>`: `<property name="smtp.password"><SECRET></property>`,
		"<entry key='database.url'>jdbc:h2:./data</entry>":   "<entry key='database.url'>jdbc:h2:./data</entry>",
		`<entry key="password" value="x1"/><b>bold</b>`:      `<entry key="password" value="<SECRET>"/><b>bold</b>`,
	})
}

// An account at an IPv4 address is an account at a machine, whatever the
// length of the address's last number.
func TestAccountAtAnAddress(t *testing.T) {
	expectRedacted(t, map[string]string{
		"scp /var/spool/koha/*.sql herquar4@192.168.210.11:/srv/bak/": "scp /var/spool/koha/*.sql <USER>@<IP>:/srv/bak/",
		"ssh herquar@10.0.0.5": "ssh <USER>@<IP>",
	})
}

// An arrow points a credential to its value; a verification question's
// answer is a secret; a flag named for a password takes a pass phrase of
// small words.
func TestArrowsAnswersAndPhrasesAfterFlags(t *testing.T) {
	expectRedacted(t, map[string]string{
		`set password for intern3 -> "Grandma's-kitchen-1962"`:                        `set password for <USER> -> "<SECRET>"`,
		`{"custom_fields":{"cf_verification_answer":"Blue Ridge Elementary"}}`:        `{"custom_fields":{"cf_verification_answer":"<SECRET>"}}`,
		"abctl local credentials --password talent velvet potato deputy":              "abctl local credentials --password <SECRET>",
		"deploy -> prod, --password-file /run/secrets/pw and the other flags are set": "deploy -> prod, --password-file /run/secrets/pw and the other flags are set",
	})
}

// A key path names what its last part names (profile::db::password), and
// => points it to its value past a comment's mark.
func TestKeyPathAndFatArrow(t *testing.T) {
	expectRedacted(t, map[string]string{
		"puppet lookup --node broker.example.net profile::db::password   # => 'Si3rra%meadow7'": "puppet lookup --node broker.example.net profile::db::password   # => '<SECRET>'",
		"the password policy => see the wiki":                                                   "the password policy => see the wiki",
	})
}

// An address after a scheme's name and a colon is an address; a
// fingerprint's colon-separated groups are not one.
func TestAddressAfterScheme(t *testing.T) {
	expectRedacted(t, map[string]string{
		"relay --out=udp:10.41.7.203:14551 --in=tcp:192.168.77.12":                     "relay --out=udp:<IP> --in=tcp:<IP>",
		"listen addr:[fd12:3456::7]:9000":                                              "listen addr:<IP>",
		"SHA1 Fingerprint=4D:0B:AE:12:70:8F:BD:0F:3C:59:67:FB:39:04:49:17:DE:3E:A4:FF": "SHA1 Fingerprint=4D:0B:AE:12:70:8F:BD:0F:3C:59:67:FB:39:04:49:17:DE:3E:A4:FF",
	})
}

// A login after a word that names a person is masked by its shape, an
// initial glued to a name and a number, wherever the sentence goes on;
// hosts, tools and words with a number are not logins (a tool whose name
// starts with two consonants that start no word, cgroup2, reads as one:
// it becomes a handle, and no word is lost).
func TestLoginAfterPersonWord(t *testing.T) {
	expectRedacted(t, map[string]string{
		"ticket closed by rkaminski4":                "ticket closed by <USER>",
		"staff pbrandt12 reopened register 3":        "staff <USER> reopened register 3",
		"cabinet for dmorales7 is locked":            "cabinet for <USER> is locked",
		"waiting for node3 to join":                  "waiting for node3 to join",
		"built by python312 in 4s":                   "built by python312 in 4s",
		"replicated by stage2 workers":               "replicated by stage2 workers",
		"access group reload: {dkovacs3, pwinter12}": "access group reload: {<USER>, <USER>}",
		"replicas [node1, node2] ready":              "replicas [node1, node2] ready",
		"owner alice reviewed the change":            "owner alice reviewed the change",
	})
}

// A social security number in its written form is masked wherever it
// stands; numbers its issuer never gives, and other shapes, are not.
func TestSocialSecurityNumber(t *testing.T) {
	expectRedacted(t, map[string]string{
		"applicant 518-42-7730 verified":   "applicant <ID> verified",
		"ssn=518-42-7730&step=2":           "ssn=<ID>&step=2",
		"part 000-42-7730 and 918-42-7730": "part 000-42-7730 and 918-42-7730",
		"ref 518-427-7301 or 2026-12-06":   "ref 518-427-7301 or 2026-12-06",
		"range 518-42-77301":               "range 518-42-77301",
	})
}

// The path after a webhook marker is its credential, unless it is words
// alone: the name of a route.
func TestWebhookRouteWords(t *testing.T) {
	expectRedacted(t, map[string]string{
		"delivered to https://example.org/hooks/ticketdesk (HTTP 204)":            "delivered to https://example.org/hooks/ticketdesk (HTTP 204)",
		"POST https://ci.example.org/webhooks/order-events":                       "POST https://ci.example.org/webhooks/order-events",
		"POST https://chat.example.org/hooks/xq1gy3yqfbg5jx8kk4k9ze7zep":          "POST https://chat.example.org/hooks/<SECRET>",
		"POST https://hooks.example.com/hooks/catch/1234567/abcdef/":              "POST https://hooks.example.com/hooks/<SECRET>/",
		"POST https://example.org/api/webhooks/1184/QwErTyUiOpAsDfGhJkLzXcVbNm12": "POST https://example.org/api/webhooks/<SECRET>",
	})
}

// A link that grants what it names (a share, an invitation, a meeting, a
// reset) carries its capability in the segment after the name; a route's
// word and a resource's number are no capability.
func TestCapabilityLinks(t *testing.T) {
	expectRedacted(t, map[string]string{
		"share link https://nas.example.net:5001/sharing/ToeyKq1WK created": "share link https://nas.example.net:5001/sharing/<SECRET> created",
		"invite https://chat.example.org/invite/aB3dE9 sent":                "invite https://chat.example.org/invite/<SECRET> sent",
		"GET https://app.example.com/invites/12345 and /api/share/settings": "GET https://app.example.com/invites/12345 and /api/share/settings",
		"see https://docs.example.com/s/WordPress and /reset/password/help": "see https://docs.example.com/s/WordPress and /reset/password/help",
	})
}

// A noun of prose after "user" is no account, in capitals too; before
// "code" the same noun makes a secret code.
func TestUserBeforeProse(t *testing.T) {
	expectRedacted(t, map[string]string{
		"user access denied":                        "user access denied",
		"REVOKED USER ACCESS ATTEMPT":               "REVOKED USER ACCESS ATTEMPT",
		"user status changed to locked":             "user status changed to locked",
		"gate controller remote access code 840213": "gate controller remote access code <SECRET>",
	})
}

// A setter's argument that provably holds no value (a reference, a mask,
// a field's name) passes no credential, as in every other position.
func TestSetterOfNoValue(t *testing.T) {
	expectRedacted(t, map[string]string{
		`cfg.SetToken("${DEPLOY_TOKEN}")`:    `cfg.SetToken("${DEPLOY_TOKEN}")`,
		`db.setPassword("[REDACTED]")`:       `db.setPassword("[REDACTED]")`,
		`cfg.SetToken("Qx7vLp2nW9kTz")`:      `cfg.SetToken("<SECRET>")`,
		`db.setPassword("amber-lantern-42")`: `db.setPassword("<SECRET>")`,
	})
}

// A bracket or a quote that closes the syntax around a word is not the
// word's: it makes no word shaped like a password, and a mask in
// parentheses is a mask. A value that opens its bracket keeps it.
func TestClosingBracketIsTheSyntaxs(t *testing.T) {
	expectRedacted(t, map[string]string{
		"test {login fails when the password is rejected} {": "test {login fails when the password is rejected} {",
		"check [config get masterauth (redacted)] again":     "check [config get masterauth (redacted)] again",
		"test {the password hashes validate input} {":        "test {the password hashes validate input} {",
		"set conf {requirepass Qx7v!Lp2nW9}":                 "set conf {requirepass <SECRET>}",
		"requirepass Tz(9)Km!vQ":                             "requirepass <SECRET>",
		"run `tool auth status` first":                       "run `tool auth status` first",
		"use the `WithPassword(pwd string)` option":          "use the `WithPassword(pwd string)` option",
	})
}

// go test reports a passing test as "--- PASS: name (time)": the word
// after PASS is the test's name. PASS as a key elsewhere is a password's.
func TestGoTestOutcome(t *testing.T) {
	in := "=== RUN   TestLedgerReplay\n--- PASS: TestLedgerReplay (0.02s)\n    --- PASS: TestLedgerReplay/empty_ledger (0.00s)\nPASS"
	expectRedacted(t, map[string]string{
		in:                  in,
		"PASS: Qx7v!Lp2nW9": "PASS: <SECRET>",
		"PASS=Qx7v!Lp2nW9":  "PASS=<SECRET>",
	})
}

// A credential word negated by "no" names the absence of a credential: the
// word after it is none.
func TestNegatedCredentialWord(t *testing.T) {
	expectRedacted(t, map[string]string{
		"ACL SETUSER auditor on nopass +readonly": "ACL SETUSER auditor on nopass +readonly",
		"profile guest nopassword Readonly-Mode7": "profile guest nopassword Readonly-Mode7",
		"nonce Qx7vLp2nW9kT":                      "nonce <SECRET>",
	})
}

// The address of a value a program builds (&pkg.Type{) is code, whose
// members carry their own names: no value stands after the key.
func TestCompositeLiteralAddress(t *testing.T) {
	expectRedacted(t, map[string]string{
		"jar := &cookiejar.Cookie{":           "jar := &cookiejar.Cookie{",
		"Credentials: &oidc.ClientSecretSet{": "Credentials: &oidc.ClientSecretSet{",
		"token := &RefreshToken{":             "token := &RefreshToken{",
		"token := &Qx7vLp2nW9":                "token := <SECRET>",
	})
}

// A printf verb in a credential's position is where a formatter writes a
// value in later: no value. One glued to more letters or digits is none.
func TestFormatVerbs(t *testing.T) {
	expectRedacted(t, map[string]string{
		"upstream Authorization = %q, want the caller's bearer": "upstream Authorization = %q, want the caller's bearer",
		"password=%s user=%s": "password=%s user=%s",
		"token: %+v":          "token: %+v",
		"password=%sEcret9":   "password=<SECRET>",
	})
}

// A host's or an account's position that holds a reference, a call or a
// printf verb names no one, as a credential's position holds no value; a
// host's key before the name of an address's field writes its notation.
func TestIdentityOfAReference(t *testing.T) {
	expectRedacted(t, map[string]string{
		"gpg --local-user $SIGNING_ID --armor x.tar.gz":    "gpg --local-user $SIGNING_ID --armor x.tar.gz",
		`tool login --username "$REGISTRY_USER" --stdin`:   `tool login --username "$REGISTRY_USER" --stdin`,
		"failed to reach node: %v":                         "failed to reach node: %v",
		"server := rpc.NewServer(opts)":                    "server := rpc.NewServer(opts)",
		"host=${DB_HOST} port=5432":                        "host=${DB_HOST} port=5432",
		"tool login --username mkowalski --stdin":          "tool login --username <USER> --stdin",
		"host=db7.corp.internal":                           "host=<HOST>",
		"the address is written host:port, as in the docs": "the address is written host:port, as in the docs",
		"dial hostname:port over TLS":                      "dial hostname:port over TLS",
	})
}

// An example cut to its vendor's prefix by an ellipsis holds no secret; a
// longer value before the ellipsis is a secret cut short, still masked.
func TestElidedExamples(t *testing.T) {
	expectRedacted(t, map[string]string{
		`client := maps.New(option.WithAPIKey("AIza..."))`: `client := maps.New(option.WithAPIKey("AIza..."))`,
		"api_key: sk-...":                                      "api_key: sk-...",
		"export SLACK_TOKEN=xoxb-…":                            "export SLACK_TOKEN=xoxb-…",
		`client := maps.New(option.WithAPIKey("AIzaQx7v..."))`: `client := maps.New(option.WithAPIKey("<SECRET>"))`,
		"token=ghp_Qx7vLp2nW9k...":                             "token=<SECRET>",
	})
}

// After a determiner "user" is the noun of a sentence, and a variable
// named user is no title: the word after them is prose. A word before
// "n't" is a verb. A quoted name, or one with a digit, is still an account.
func TestUserAsANoun(t *testing.T) {
	expectRedacted(t, map[string]string{
		"the scheduler retries when the user reconnects":   "the scheduler retries when the user reconnects",
		"grant this user widgets and gadgets":              "grant this user widgets and gadgets",
		"set names [dict get $user aliases]":               "set names [dict get $user aliases]",
		"skip it when user doesn't answer":                 "skip it when user doesn't answer",
		"removed the user 'mkowalski' from the group":      "removed the user '<USER>' from the group",
		"removed the user mkowalski7 from the group":       "removed the user <USER> from the group",
		"user mkowalski logged in":                         "user <USER> logged in",
		"curl --user mkowalski:Qx7vLp2nW9 https://example": "curl --user <SECRET> https://example",
	})
}

// A checksum file lists hexadecimal digests: a line's first word of
// base64's length before two spaces (a pod's name) proves nothing public.
func TestChecksumLineIsHexadecimal(t *testing.T) {
	expectRedacted(t, map[string]string{
		"out-api-7d9f8b6c5d-x2k4p  restarted":                "<POD>  restarted",
		"9e107d9d372bb6826bd81d3542a419d6  app-1.4.2.tar.gz": "9e107d9d372bb6826bd81d3542a419d6  app-1.4.2.tar.gz",
	})
}

// expectRedacted checks that String turns each input into its wanted
// output.
// expectKept checks that each line comes out of the redactor unchanged.
func expectKept(t *testing.T, lines ...string) {
	t.Helper()
	for _, in := range lines {
		if got := String(in); got != in {
			t.Errorf("%q:\n got  %q", in, got)
		}
	}
}

func expectRedacted(t *testing.T, cases map[string]string) {
	t.Helper()
	for in, want := range cases {
		if got := String(in); got != want {
			t.Errorf("%q:\n got  %q\n want %q", in, got, want)
		}
	}
}

// A directive that only ever names a password takes any word as its
// value; the words of a sentence that names it stay.
func TestPasswordDirectivesTakeAnyWord(t *testing.T) {
	expectRedacted(t, map[string]string{
		"requirepass kettlebell":                      "requirepass <SECRET>",
		"R 2 config set masterauth lanternfish":       "R 2 config set masterauth <SECRET>",
		"start_server {overrides {requirepass oboe}}": "start_server {overrides {requirepass <SECRET>}}",
		"keytool -list -storepass marmalade":          "keytool -list -storepass <SECRET>",
		"# requirepass is off by default":             "# requirepass is off by default",
		"Set the requirepass option in redis.conf":    "Set the requirepass option in redis.conf",
		"requirepass must be set when bound to a LAN": "requirepass must be set when bound to a LAN",
		"requirepass ${REDIS_PASSWORD}":               "requirepass ${REDIS_PASSWORD}",
	})
}

// The escape of a control character (\n, \t, \r, \u000a, \x1b) in a
// message logged on one line separates as the character itself would, in
// every pass that delimits a value or a token: its letter joins neither
// the value before it nor the token after it.
func TestEscapedControlSeparates(t *testing.T) {
	expectRedacted(t, map[string]string{
		`{"out":"build ok\nrequest 7QpxK2mZr4Lw8NvB3sYt done"}`:  `{"out":"build ok\nrequest <ID> done"}`,
		`{"out":"queued\tK2mZr4Lw8NvB3sYt7Qpx"}`:                 `{"out":"queued\t<ID>"}`,
		`{"out":"queued\u000aK2mZr4Lw8NvB3sYt7Qpx"}`:             `{"out":"queued\u000a<ID>"}`,
		`{"log":"passphrase: Harbor?Oatmeal48\nnext line here"}`: `{"log":"passphrase: <SECRET>\nnext line here"}`,
		`{"log":"secret: kettle77\u000anext line here"}`:         `{"log":"secret: <SECRET>\u000anext line here"}`,
		`{"log":"The password is marmot88\nThe next step"}`:      `{"log":"The password is <SECRET>\nThe next step"}`,
		`{"cmd":"login ops Lantern!Fig42\nwhoami"}`:              `{"cmd":"login <USER> <SECRET>\nwhoami"}`,
		`{"cmd":"mysql -u root -pquill8Harbor\nexit"}`:           `{"cmd":"mysql -u root -p<SECRET>\nexit"}`,
		`{"out":"sent\nmara.oduya@tidewater.org\nnext"}`:         `{"out":"sent\n<EMAIL>\nnext"}`,
		`{"out":"progress\x0dK2mZr4Lw8NvB3sYt7Qpx"}`:             `{"out":"progress\x0d<ID>"}`,
		`{"out":"progress 100%\rK2mZr4Lw8NvB3sYt7Qpx"}`:          `{"out":"progress 100%\r<ID>"}`,
		`{"out":"hint\nSummer2024!\nnext"}`:                      `{"out":"hint\n<SECRET>\nnext"}`,
	})
}

// A YAML tag that resolves a name elsewhere (!secret, !env_var, !include,
// !Ref) makes the name a reference to a secret, kept as it is, and the
// credential word inside a tag is no keyword; a type tag (!!str, !unsafe)
// is kept and the value after it is the value.
func TestYAMLTags(t *testing.T) {
	expectRedacted(t, map[string]string{
		"mqtt_password: !secret broker_pass_2":       "mqtt_password: !secret broker_pass_2",
		"  api_key: !secret OpenMeteoKey3":           "  api_key: !secret OpenMeteoKey3",
		"token: !env_var LINKY_TOKEN_V2":             "token: !env_var LINKY_TOKEN_V2",
		"password: !env_var broker_pass_9":           "password: !env_var broker_pass_9",
		"client_secret: !include oauth_secret2.yaml": "client_secret: !include oauth_secret2.yaml",
		"DBPassword: !ImportValue shared-DbPass7":    "DBPassword: !ImportValue shared-DbPass7",
		"webhook_secret: !input hook_secret_4":       "webhook_secret: !input hook_secret_4",
		"ota: { password: !secret ota_pass_v3 }":     "ota: { password: !secret ota_pass_v3 }",
		"password: !!str Quokka84vale":               "password: !!str <SECRET>",
		"vault_password: !unsafe 'Gannet{{41}}Reef'": "vault_password: !unsafe '<SECRET>'",
		"password: Quokka84vale":                     "password: <SECRET>",
		"if (!secret2fa) { prompt(user) }":           "if (!secret2fa) { prompt(user) }",
	})
}

// A credential word joined by a hyphen to a following word makes an
// adjective or a compound noun (password-protected, token-based,
// secret-free), not a keyword: the text after it is no value. A compound
// whose last word is the credential still names one.
func TestHyphenedCompoundIsNoKeyword(t *testing.T) {
	expectRedacted(t, map[string]string{
		"the lounge wifi is password-protected (voucher printed at reception)": "the lounge wifi is password-protected (voucher printed at reception)",
		"the demo runs token-gated (invite4 only)":                             "the demo runs token-gated (invite4 only)",
		"ships secret-scanning (pre-commit7) by default":                       "ships secret-scanning (pre-commit7) by default",
		"passphrase-encrypted (AES-256) backups are kept for 30 days":          "passphrase-encrypted (AES-256) backups are kept for 30 days",
		"set db-password Quokka84vale":                                         "set db-password <SECRET>",
		"wifi-passphrase Gannet!Reef41":                                        "wifi-passphrase <SECRET>",
	})
}

// A credential word followed by a word of the interface names the part
// of the interface that shows or asks for it (a menu, a button, whether
// it is visible), not the credential; qualified and compound keys keep
// their class.
func TestInterfaceWordsAfterACredential(t *testing.T) {
	for key, want := range map[string]kvClass{
		"secretMenuVisible": kvNone, "token_button": kvNone, "passwordIcon": kvNone, "pinDialog": kvNone,
		"showPasswordToggle": kvNone, "secretKey": kvSecret, "clientSecret": kvSecret, "passwordHash": kvNone,
		"db_password": kvSecret, "secret_access_key": kvSecret, "menu_password": kvSecret,
	} {
		if got := classifyKey([]byte(key)); got != want {
			t.Errorf("classifyKey(%q) = %v, want %v", key, got, want)
		}
	}
	expectRedacted(t, map[string]string{
		"const secretPanelShown = cart.items.length > 3;": "const secretPanelShown = cart.items.length > 3;",
		"passcode_modal = views.lockScreen":               "passcode_modal = views.lockScreen",
		"token_dropdown: settings.tokenList":              "token_dropdown: settings.tokenList",
		"menu_secret = Quokka84vale":                      "menu_secret = <SECRET>",
	})
}

// A path of members compared with another value is an expression of
// code, not a value, whatever its key names.
func TestComparedPathIsCode(t *testing.T) {
	expectRedacted(t, map[string]string{
		"const auth = staff.level === 'owner' && !till.closed;": "const auth = staff.level === 'owner' && !till.closed;",
		"let passOk = ctx.badge.id !== undefined;":              "let passOk = ctx.badge.id !== undefined;",
		"password = Summer.Time && echo done":                   "password = <SECRET> && echo done",
		"password = Summer.Time":                                "password = <SECRET>",
	})
}

// After a credential word's colon, a word followed by the grammar of a
// sentence opens one in any language whose credential words the
// redactor knows: a password rule, not a password. A number is a word
// of the sentence; a function word followed by more words opens one.
func TestSentenceAfterTheColonInOtherLanguages(t *testing.T) {
	expectKept(t,
		"Contraseña: al menos 12 letras, sin espacios y con un símbolo.",
		"Clave: exactamente 6 dígitos para el portal",
		"Mot de passe : 14 caractères minimum avec une majuscule",
		"Kennwort: wenigstens 9 Zeichen mit einer Zahl",
		"Senha: pelo menos 10 caracteres e um símbolo",
		"Wachtwoord: minstens 12 tekens met een hoofdletter",
		"Passord: minst 10 tegn og ett tall",
		"Hasło: przynajmniej 9 znaków oraz cyfra",
	)
	expectRedacted(t, map[string]string{
		"Contraseña: gatito":      "Contraseña: <SECRET>",
		"Kennwort: Quokka84vale":  "Kennwort: <SECRET>",
		"Senha: marmelada":        "Senha: <SECRET>",
		"password: lanternfish ✓": "password: <SECRET> ✓",
	})
}

// After "user", an English word with the -s of a plural or of a verb
// (user comments, the user accesses) continues the sentence; a name that
// ends in s is still a name.
func TestUserBeforeAnEnglishPlural(t *testing.T) {
	expectKept(t,
		"Please read other user comments before filing a bug",
		"Send user invitations from the admin page",
		"A list of User objects with a city attribute",
		"In this mode user accesses are logged to the journal",
		"Support for user customizations of the theme",
	)
	expectRedacted(t, map[string]string{
		"sshd: session opened for user james by (uid=0)": "sshd: session opened for user <USER> by (uid=0)",
		"Accepted password for user jonas from 10.0.0.7": "Accepted password for user <USER> from <IP>",
		"user ines logged out":                           "user <USER> logged out",
	})
}

// A value that is its key's name, or the name of the key's last word, in
// another case is the variable that holds the field's value in code.
func TestValueNamingItsKey(t *testing.T) {
	expectKept(t,
		"	srv := &Server{Host: host, Owner: owner}",
		"	cfg := Config{RefreshToken: refreshToken, Timeout: timeout}",
		`	"x-hub-signature" => signature,`,
		"    apiKey: apikey,",
	)
	expectRedacted(t, map[string]string{
		"Owner: moana":                 "Owner: <USER>",
		"api_key: Quokka84vale":        "api_key: <SECRET>",
		"refresh_token: refreshTokens": "refresh_token: <SECRET>",
	})
}

// $::name is a variable of the global namespace (Tcl, Perl's main
// package): a reference, like $NAME.
func TestGlobalVariableIsAReference(t *testing.T) {
	expectKept(t,
		"    r auth $::admin_user $::admin_pass",
		"    r config set masterauth $::primary_pass",
		"    S 0 SENTINEL SET ring auth-pass $::sentinel_password",
	)
	expectRedacted(t, map[string]string{
		"password: $::Kettle7": "password: <SECRET>",
		"masterauth Quokka84":  "masterauth <SECRET>",
	})
}

// The text of a Markdown link ends at "](": a credential word in a
// link's title takes no value across it.
func TestLinkTitleIsNoValue(t *testing.T) {
	expectKept(t,
		"  - [Token Rotation](#token-rotation)",
		"[Password Policies](../guides/policies.md) in the admin guide",
		"[Login additional operators](../../ops/rota_test.go) inside_block:withRota",
		// A link reference's title after its URL; words set in bold.
		`[1]: https://openid.net/specs/core.html#CodeFlowAuth "3.1. Authentication using the Authorization Code Flow"`,
		"2. **Token Exchange** (RFC 8693): ID Token to ID-JAG, as a **Community module**",
	)
	expectRedacted(t, map[string]string{
		"password Kettle7](x)": "password <SECRET>",
		"token Quokka84vale":   "token <SECRET>",
		"password Hunter2**":   "password <SECRET>",
	})
}

// user@host:path with the account of a role (git@github.com:owner/repo)
// is a remote reached through a forge's shared account, not a mailbox:
// the account stays and the machine is judged as any name is.
func TestRemoteThroughARoleAccount(t *testing.T) {
	expectRedacted(t, map[string]string{
		"git remote add upstream git@github.com:tidewater/anchor.git": "git remote add upstream git@github.com:tidewater/anchor.git",
		"git clone git@git.harbor.internal:ops/ledger.git":            "git clone git@<HOST>:ops/ledger.git",
		"mail mara.oduya@tidewater.org for access":                    "mail <EMAIL> for access",
		"scp notes.txt mara@tidewater.org:/srv/share":                 "scp notes.txt <EMAIL>:/srv/share",
	})
}

// A pass phrase is drawn at random: a word of grammar, of prose or a
// plural of one, first or later, makes the words a sentence.
func TestPassPhraseHasNoWordOfProse(t *testing.T) {
	expectKept(t,
		"(a typo can be a leaked password). Parsing of odd connection strings is usually rough guesswork:",
		"(one stray byte can hide a password). Recovery is necessarily slow going",
		"It takes extra user and password pairs to add more proxy configurations.",
	)
	expectRedacted(t, map[string]string{
		"the password is otter pebble granite heron": "the password is <SECRET>",
		"--passphrase talent velvet potato deputy":   "--passphrase <SECRET>",
		"password: lantern quiver mango basalt":      "password: <SECRET>",
	})
}

// After a host's key, a variable named for an address's field writes
// the notation (host:mappedPort), and an absolute path is a Unix
// socket's directory (host=/var/run/postgresql): neither is a machine.
func TestHostNotationAndSocketDirectory(t *testing.T) {
	expectKept(t,
		"Endpoint returns `host:exposedPort` of the running broker.",
		"PGHOST_DSN=\"host=/var/run/postgresql dbname=ledger\"",
	)
	expectRedacted(t, map[string]string{
		"host=db07.harbor.internal port=5432": "host=<HOST> port=5432",
		"host: tidewaterPrimary":              "host: <HOST>",
	})
}

// A mask after an authorization scheme (Basic [REDACTED], Bearer ****)
// is no credential, as it is none after any other key.
func TestMaskAfterAnAuthorizationScheme(t *testing.T) {
	expectKept(t,
		"kiln orders: Authorization: Basic [REDACTED]",
		"proxy: Proxy-Authorization: Bearer ********",
		"Authorization: Bearer <redacted>",
	)
	expectRedacted(t, map[string]string{
		"Authorization: Basic a2lsbjpRdW9ra2E4NHZhbGU=": "Authorization: Basic <SECRET>",
		"Authorization: Bearer Quokka84vale":            "Authorization: Bearer <SECRET>",
	})
}

// A reference by a scheme (vault:, secretref:) names a path and a field:
// the whole path is the reference, not its first segment.
func TestSchemeReferenceTakesItsPath(t *testing.T) {
	expectKept(t,
		"kiln.env: KILN__VAULT__TOKEN=vault:kv/data/kiln/ops#token",
		"api_key: secretref:prod/stripe#key",
	)
}

// A state (enabled, disabled, on, off) is a boolean's value, after a
// key named for a credential's feature as after any other.
func TestStateIsNoSecret(t *testing.T) {
	expectKept(t,
		"repo settings: secret_scanning: enabled; push_protection: disabled",
		"token_rotation=off",
	)
	expectRedacted(t, map[string]string{
		"password: enabled7": "password: <SECRET>",
		"token=Quokka84vale": "token=<SECRET>",
	})
}

// A value that goes on as program syntax is code, whose value the program
// builds: a composite literal ([]string{, map[K]V{, Session{, struct{}) or
// a type assertion. A password with a brace in it is no literal.
func TestCompositeLiteralsAndAssertions(t *testing.T) {
	expectKept(t,
		`	AuthorizationServers: []string{"https://auth.example.com"},`,
		"	MySession: MySession{",
		"	retryableStatusCodes := map[codes.Code]bool{",
		"	session := actual.(*gexec.Session)",
		"	type Token struct{}       // auth.Token",
	)
	expectRedacted(t, map[string]string{
		"password: Secret{123}": "password: <SECRET>",
	})
}

// An auth setting whose value names a method (bearer, OAuth) or is words
// joined (default-chain) chooses how to authenticate: no credential.
func TestAuthSettingNamesAMethod(t *testing.T) {
	expectKept(t,
		"AWS_REGION=us-east-1 BEDROCK_AUTH=bearer BEDROCK_LIVE_AUTH=default-chain go test ./bedrock",
		"bedrockAuth: bearer",
		"- **ext-auth: OAuth Client Credentials** (see issue 627)",
	)
	expectRedacted(t, map[string]string{
		"auth=hunter22 REDIS_AUTH=Kq7password": "auth=<SECRET> REDIS_AUTH=<SECRET>",
		"X-Civi-Auth: Bearer Kq7xW2mPz9Lr":     "X-Civi-Auth: Bearer <SECRET>",
	})
}

// A value of words that starts with my or our and ends naming what it
// stands for is an example's placeholder; a pass phrase that holds such a
// word elsewhere is not.
func TestMinePlaceholders(t *testing.T) {
	expectKept(t,
		`typesense.WithAPIKey("my-api-key")`,
		`option.WithAPIKey("my-anthropic-api-key"), // defaults to os.LookupEnv("ANTHROPIC_API_KEY")`,
		"bazel test //... --test_env=TESTCONTAINERS_SESSION_ID=my-session",
	)
	expectRedacted(t, map[string]string{
		"password=my-secret-garden": "password=<SECRET>",
		"password=my-dog-rex":       "password=<SECRET>",
	})
}

// A word of prose in parentheses after a credential's noun is an aside,
// and a pattern between '*'s is what a test expects to read; a password
// in parentheses is still one.
func TestAsidesAndPatterns(t *testing.T) {
	expectKept(t,
		"1. `waitTurn` — acquire a semaphore token (blocks).",
		`        set expected_code "*ERR max*reached*"`,
	)
	expectRedacted(t, map[string]string{
		"the password (hunter2) was changed": "the password <SECRET> was changed",
		"token (Kq7xW2mPz9) was issued":      "token <SECRET> was issued",
	})
}

// A certificate whose END line was cut off is public over its base64 body
// only: the text after the body is read as any text is.
func TestCutOffCertificateCoversItsBody(t *testing.T) {
	body := "MIIBszCCAVmgAwIBAgIUQx7h2kW9pLrT3vYmZ8nB1cD4eF0wCgYIKoZIzj0EAwIw\\nEjEQMA4GA1UEAwwHdGVzdC1jYTAeFw0yNjAxMDEwMDAwMDBaFw0yNzAxMDEwMDAw"
	expectKept(t, `{"pem":"-----BEGIN CERTIFICATE-----\n`+body)
	expectRedacted(t, map[string]string{
		"-----BEGIN CERTIFICATE----- Authorization: Bearer b8Ru4BuMsArFpI6Nv4Db A": "-----BEGIN CERTIFICATE----- Authorization: Bearer <SECRET> A",
	})
}

// A flag named for a credential and followed by prose is a message about
// the flag, not its value.
func TestProseAfterACredentialFlag(t *testing.T) {
	expectKept(t,
		"Error: --password requires a value",
		"flag --token is required when --api-key expects a file",
	)
	expectRedacted(t, map[string]string{
		"--password talent velvet potato deputy": "--password <SECRET>",
		"sshpass --password letmein to connect":  "sshpass --password <SECRET> to connect",
		"--token Kq7xW2 for the bot":             "--token <SECRET> for the bot",
	})
}

// A pass phrase a person writes in capitalised words (Harbour Light
// 1954) is one value after a credential's word, its colon or its
// connector, and wherever a pass masked its first word; capitalised
// words that say what the credential is, or that go on the sentence, are
// prose.
func TestPassPhrasesOfCapitalisedWords(t *testing.T) {
	expectRedacted(t, map[string]string{
		"kiosk admin password is Copper Kettle Morning": "kiosk admin password is <SECRET>",
		"Password: Harbour Light 1954":                  "Password: <SECRET>",
		"depot console password Green Lantern 7":        "depot console password <SECRET>",
		"archive passphrase Saltmarsh Heron":            "archive passphrase <SECRET>",
		"sync --user ops --pass Orchard Gate 12":        "sync --user ops --pass <SECRET>",
		"vault passphrase=Amber Wharf Lantern, rotated": "vault passphrase=<SECRET>, rotated",
		"upload key passphrase Quiet and Steady 9":      "upload key passphrase <SECRET>",
		"Password: Not Set":                             "Password: Not Set",
		"password: Required Field":                      "password: Required Field",
		"Password Reset Link Sent":                      "Password Reset Link Sent",
		"password for Anna Berg changed":                "password for <USER> changed", // a person's name, no pass phrase
		"the password Manager Window opened for Anna":   "the password Manager Window opened for Anna",
		"Password: Same As Before":                      "Password: Same As Before",
	})
}

// One word that ends the clause after an English password's word (its
// abbreviations pw and pwd too) is the password when it reads as no word
// of prose, grammar, state or setting: a person chose it. Words that say
// how the password is, other languages' prose, and a password's word in
// punctuation stay.
func TestChosenWordAfterPasswordWord(t *testing.T) {
	expectRedacted(t, map[string]string{
		"depot laptop password lanternfish":              "depot laptop password <SECRET>",
		"wiki admin pw quarrystone":                      "wiki admin pw <SECRET>",
		"newsletter smtp pw heron-quay":                  "newsletter smtp pw <SECRET>",
		"router pwd saltcrane, rotated monthly":          "router pwd <SECRET>, rotated monthly",
		"default pw changed from admin1234 to Kelp&Tide": "default pw changed from <SECRET> to <SECRET>",
		"password expired":                               "password expired",
		"Password mismatch":                              "Password mismatch",
		"enable password self-service":                   "enable password self-service",
		"no password fallback":                           "no password fallback",
		"Benutzername oder Kennwort falsch":              "Benutzername oder Kennwort falsch",
		"ACL setuser worker on >passwd nocommands":       "ACL setuser worker on >passwd nocommands",
		"use `connect(user, password)` option.":          "use `connect(user, password)` option.",
		"reset the password manager":                     "reset the password manager",
	})
}

// A dial's or a keypad's code is written as its numbers joined by dashes
// (7-3-9-1): after a code's word it is the code, a date in two-digit
// groups too; a date with its year in four digits, a range of two and an
// announcement that goes on elsewhere are none.
func TestDialCodesInDashedGroups(t *testing.T) {
	expectRedacted(t, map[string]string{
		"shed padlock combination 4-8-1-6 shared with the crew": "shed padlock combination <SECRET> shared with the crew",
		"store padlock 0-2-2-9":                                 "store padlock <SECRET>",
		"vault combination was changed to 12-40-31 today":       "vault combination was changed to <SECRET> today",
		"drop safe combination 19-07-22 for stand 4":            "drop safe combination <SECRET> for stand 4",
		"error code 2026-12-01 ok":                              "error code 2026-12-01 ok",
		"door code valid until 2026-12-01":                      "door code valid until 2026-12-01",
		"combination 1-2":                                       "combination 1-2",
		"Radio code (serial 4471): 5932":                        "Radio code (serial 4471): <SECRET>",
	})
}

// A person's name after a noun for whom a record is about (customer,
// patient, holder=) is masked as an account's name; a capitalised title
// of a team, a place or a thing, or a noun in a title, stays. A phone
// number in national form (its leading zero and its groups), or after a
// word for a phone in prose, is masked; counts, dates and ids stay.
func TestPersonsAndSpokenPhones(t *testing.T) {
	expectRedacted(t, map[string]string{
		"kiosk customer Imogen Falkenrath voucher issued":    "kiosk customer <USER> voucher issued",
		"scan result=VALID holder=Tobias Lindqvist":          "scan result=VALID holder=<USER>",
		"call from patient Rosalind Achterberg, answered":    "call from patient <USER>, answered",
		"customer Success Team notified":                     "customer Success Team notified",
		"paged patient Care Unit":                            "paged patient Care Unit",
		"the Database Client Semantic Conventions":           "the Database Client Semantic Conventions",
		"label for customer phone 555-0148 printed":          "label for customer phone <PHONE> printed",
		"call back on 07700 900331 after six":                "call back on <PHONE> after six",
		"switchboard 020 7946 0958, mobile: 0412 345 678":    "switchboard <PHONE>, mobile: <PHONE>",
		"phone 12 of 40, tel 2026-12-01, order 0123 4567 89": "phone 12 of 40, tel 2026-12-01, order 0123 4567 89",
		"offsets 0 100 200 and 0123456789":                   "offsets 0 100 200 and 0123456789",
	})
}

// After "login", the account before a credential's word or a failure is
// masked (operator login dock_op7 pin=…, login hmarsh failed); a role's
// account, a word of prose and a page stay. After "with code" or "enter
// code", a code whose capitals and digits alternate is the secret one; an
// exit's number, an error's name and an SQL state are not.
func TestAccountsAtLoginAndCodesGivenWith(t *testing.T) {
	expectRedacted(t, map[string]string{
		"station operator login dock_op7 pin=5521":       "station operator login <USER> pin=<SECRET>",
		"handheld login crew9_lead password Tern-Lake-4": "handheld login <USER> password <SECRET>",
		"WARN login hmarsh failed 3x":                    "WARN login <USER> failed 3x",
		"login admin failed":                             "login admin failed",
		"login page failed to load":                      "login page failed to load",
		"player checked in with code K7QW2M":             "player checked in with code <SECRET>",
		"process exited with code 137":                   "process exited with code 137",
		"request failed with code ERR42":                 "request failed with code ERR42",
		"query failed with code 42P01":                   "query failed with code 42P01",
	})
}

// A custom header's key (x-<vendor>-key) is a credential, whatever its
// vendor; a key that finds or orders data (x-cache-key) is not.
func TestCustomHeaderKeys(t *testing.T) {
	expectRedacted(t, map[string]string{
		"x-harbourline-key: 7HqP2mWx":  "x-harbourline-key: <SECRET>",
		`{"X-Tillroll-Key":"Zk81pQa"}`: `{"X-Tillroll-Key":"<SECRET>"}`,
		"x-cache-key: orders-page-2":   "x-cache-key: orders-page-2",
	})
}

// A name right before an e-mail address, in parentheses, in angle
// brackets or before a comma, is its owner's: masked as an account's
// name, as the address is. A team's title before its address stays.
func TestNameBesideItsAddress(t *testing.T) {
	expectRedacted(t, map[string]string{
		"tip from Ottilie Brennan (ottilie.b@example.com) 5.00": "tip from <USER> (<EMAIL>) 5.00",
		`row: "Casimir Vollmer,c.vollmer@example.org,Box 3"`:    `row: "<USER>,<EMAIL>,Box 3"`,
		"Signed-off-by: Ines Marchetti <ines@example.net>":      "Signed-off-by: <USER> <<EMAIL>>",
		"Contact Support Team <support@example.com>":            "Contact Support Team <<EMAIL>>",
		"Zorvath Brennan wrote the guide":                       "Zorvath Brennan wrote the guide", // no address, no given name known
	})
	// The account of a pair glued by a slash after a login word is a
	// role's or shaped as an account, or the password is words joined by
	// dashes; a pair of words is prose.
	expectRedacted(t, map[string]string{
		"archive NAS login admin/quarrystone":                   "archive NAS login admin/<SECRET>",
		"counter: supervisor login sup/pennies-from-heaven":     "counter: supervisor login <USER>/<SECRET>",
		"login admin/read-only-view, login docs/how-to-install": "login admin/read-only-view, login docs/how-to-install",
		"Use environment credentials, fake/synthetic fixtures":  "Use environment credentials, fake/synthetic fixtures",
		"Passphrase Recovery Tool":                              "Passphrase Recovery Tool",
	})
}

// A key's code after what the key opens is that lock's code (door key
// code 4602); a keyboard's key code is not.
func TestKeyCodeOfALock(t *testing.T) {
	expectRedacted(t, map[string]string{
		"bin door key code 4602":         "bin door key code <SECRET>",
		"the cabinet key code is 4720":   "the cabinet key code is <SECRET>",
		"javascript key code 13 pressed": "javascript key code 13 pressed",
		"keyboard key code 4602 mapped":  "keyboard key code 4602 mapped",
	})
}

// A configuration's account is kept when every credential of its line is
// kept elsewhere (a reference, a vault path, a YAML tag, a mask, a
// placeholder, a setting that names where it is read from): the line
// exposes no credential it is half of. Beside a literal credential, or
// given to a login command, the account is masked as before.
func TestAccountOfAReferencedCredential(t *testing.T) {
	expectRedacted(t, map[string]string{
		"db: Server=${DB_HOST};User Id=hbr_ops2;Password=${HARBOUR_DB_PASSWORD};": "db: Server=${DB_HOST};User Id=hbr_ops2;Password=${HARBOUR_DB_PASSWORD};",
		`<database user="ktarrow" password="${TALLY_PASSWORD}"/>`:                 `<database user="ktarrow" password="${TALLY_PASSWORD}"/>`,
		"smtp: {user: mvale, passwd: !vault smtp/relay#password}":                 "smtp: {user: mvale, passwd: !vault smtp/relay#password}",
		"feed.user=quay_in feed.password.ref=env:QUAY_FEED_PASS":                  "feed.user=quay_in feed.password.ref=env:QUAY_FEED_PASS",
		"admin_user=proctor1 admin_password=***** pin_length=4":                   "admin_user=proctor1 admin_password=***** pin_length=4",
		"user=ktarrow password=Brine.Gull42":                                      "user=<USER> password=<SECRET>",
		"user=ktarrow password=${TALLY_PASSWORD} token=q8Zr2LmX0pVw7Ks3":          "user=<USER> password=${TALLY_PASSWORD} token=<SECRET>",
		"user=ktarrow dbname=orders":                                              "user=<USER> dbname=orders",
		"host=db.example user=fxw2 password=**** dbname=bookings":                 "host=db.example user=fxw2 password=**** dbname=bookings",
		"till switch: user 'belay_dk' PIN ******** ok":                            "till switch: user 'belay_dk' PIN ******** ok",
		"user jkarlsson PIN 4412":                                                 "user <USER> PIN <SECRET>",
		"docker login --username jdoe --password-stdin":                           "docker login --username <USER> --password-stdin",
	})
	// A placeholder in angle brackets is no value, in a cookie too; a
	// value in angle brackets with a digit or a symbol is.
	expectRedacted(t, map[string]string{
		"Set-Cookie: frsid=<hidden>; Path=/; HttpOnly": "Set-Cookie: frsid=<hidden>; Path=/; HttpOnly",
		"Set-Cookie: frsid=<Qx7-pL2>; Path=/":          "Set-Cookie: frsid=<SECRET>; Path=/",
	})
}

// A security answer comes after its question: a question quoted between
// the answer's noun and a setter (=, set to, recorded as) is kept, and the
// value after the setter is masked.
func TestAnswerAfterItsQuotedQuestion(t *testing.T) {
	expectRedacted(t, map[string]string{
		`portal secret answer "first pony" = Bramble`:              `portal secret answer "first pony" = <SECRET>`,
		`security answer 'city of birth' set to Tamworth Vale`:     `security answer 'city of birth' set to <SECRET>`,
		`security answer recorded as Hollybrook`:                   `security answer recorded as <SECRET>`,
		`secret answer "Lantern Yard"`:                             `secret answer "<SECRET>"`,
		`the answer to "how many retries" set to three, as before`: `the answer to "how many retries" set to three, as before`,
	})
}

// A pass phrase of words joined by dashes may hold a connector between
// two chosen words (embers-and-oak); a compound of prose stays.
func TestDashedPassPhraseWithConnector(t *testing.T) {
	expectRedacted(t, map[string]string{
		"guest wifi password embers-and-oak":  "guest wifi password <SECRET>",
		"kiosk pw pennies-from-heaven":        "kiosk pw <SECRET>",
		"cabin password smores-by-the-lake":   "cabin password <SECRET>",
		"password self-service, see the docs": "password self-service, see the docs",
	})
}

// Digits in five groups or more of one length (a disk's recovery key) are
// a generated code wherever they stand; a date, a phone number, an order
// number and a card's four groups are not. A recovery key is a key.
func TestDigitGroupsAndRecoveryKeys(t *testing.T) {
	expectRedacted(t, map[string]string{
		"laptop recovery key 731484-623324-574774-126991-728086-279924-856249-038849 stored": "laptop recovery key <SECRET> stored",
		"escrowed 412260-118734-609915-774102-330561-908274-125587-640031":                   "escrowed <ID>",
		"recovery_key=731484623324":                                     "recovery_key=<SECRET>",
		"recovery key rotation enabled, recovery_key_length=48":         "recovery key rotation enabled, recovery_key_length=48",
		"on 2026-12-06 order 1234-5678-9012 shipped, ref 555-0100-1234": "on 2026-12-06 order 1234-5678-9012 shipped, ref 555-0100-1234",
	})
}

// Code that prints or builds values is not a login: a call's three quoted
// arguments are an account and a password only after a connection string,
// a DSN or a host; a composite literal of a package's type is a value a
// program builds; go get -u takes a module's path; a community is SNMP's
// password only where SNMP is named; a locale is no secret.
func TestCodeIsNoLogin(t *testing.T) {
	expectRedacted(t, map[string]string{
		`fmt.Println("L2 Cache:", CPU.Cache.L2, "bytes")`:                        `fmt.Println("L2 Cache:", CPU.Cache.L2, "bytes")`,
		`new SqlConnection("Data Source=db;Initial Catalog=x", "sa2", "Pw!9xq")`: `new SqlConnection("Data Source=db;Initial Catalog=x", "<USER>", "<SECRET>")`,
		"sessionPoolConfig := spanner.SessionPoolConfig{":                        "sessionPoolConfig := spanner.SessionPoolConfig{",
		"$ go get -u github.com/kylelemons/godebug/{pretty,diff}":                "$ go get -u github.com/kylelemons/godebug/{pretty,diff}",
		"lftp -u deploy,Wq8zz1 sftp://h":                                         "lftp -u <SECRET> sftp://h",
		"WaitingFor: wait.ForLog(`.*MySQL Community Server`).AsRegexp(),":        "WaitingFor: wait.ForLog(`.*MySQL Community Server`).AsRegexp(),",
		"SNMP community Xq7pL29z":                                                "SNMP community <SECRET>",
		`TargetLanguageCode: "en-US",`:                                           `TargetLanguageCode: "en-US",`,
	})
}

// A host's key with a boolean or null is a setting, and the names a
// container runtime or a cluster gives the machine itself are public, as
// localhost is.
func TestRuntimeHostsAndHostSettings(t *testing.T) {
	expectRedacted(t, map[string]string{
		"[(validate.rules).string.hostname = true]":            "[(validate.rules).string.hostname = true]",
		`TESTCONTAINERS_HOST_OVERRIDE: "host.docker.internal"`: `TESTCONTAINERS_HOST_OVERRIDE: "host.docker.internal"`,
		"curl http://host.docker.internal:8080/health":         "curl http://host.docker.internal:8080/health",
		"host=redis-07.sjc.internal":                           "host=<HOST>",
	})
}

// A local number (555-0143) is a phone in the value of a phone's key and
// after a verb that dials one; a person's name is read in a JSON member
// named for whom the record serves, and in any script after its first
// letter; a key named for the work a person does holds their account when
// it is shaped as one; a key safe's code follows it.
func TestLocalPhonesServedMembersAndActors(t *testing.T) {
	expectRedacted(t, map[string]string{
		`{"rental":"RT-3302","guardian_phone":"555-0112"}`:        `{"rental":"RT-3302","guardian_phone":"<PHONE>"}`,
		"dog is friendly. Call 555-0143 on arrival.":              "dog is friendly. Call <PHONE> on arrival.",
		"we called 3 times, ref 555-0143":                         "we called 3 times, ref 555-0143",
		`{"hold":"PH-3310","customer":"Marek Novak"}`:             `{"hold":"PH-3310","customer":"<USER>"}`,
		`{"customer":"Support Team","member":"Gold Tier"}`:        `{"customer":"Support Team","member":"Gold Tier"}`,
		"reservation RSV-7720 customer Tomasz Wiśniewski phone x": "reservation RSV-7720 customer <USER> phone x",
		"sync: adjuster=dwalsh pilot=r.costa":                     "sync: adjuster=<USER> pilot=<USER>",
		"drone_pilot=auto field_adjuster=dwalsh":                  "drone_pilot=auto field_adjuster=<USER>",
		"drone pilot=auto mode=manual, courier=ups":               "drone pilot=auto mode=manual, courier=ups",
		"golf cart key safe 1960 behind the office":               "golf cart key safe <SECRET> behind the office",
		"safe mode 2 enabled; safe 3 of 4 replicas":               "safe mode 2 enabled; safe 3 of 4 replicas",
	})
	// A structured field named for such work is left to the text pass,
	// which reads its value's shape, whatever words name the work.
	for _, key := range []string{"pilot", "drone_pilot", "leadNurse"} {
		if k := FieldKind([]byte(key)); k != "" {
			t.Errorf("FieldKind(%q) = %q, want none", key, k)
		}
	}
}

// A code named with what it opens may follow the place ("gate code for
// Elm St lot 8937#"), and a second code of the same length may follow the
// first after a comma and a few words ("passcode 080808, manager iPad
// 271828"); a year, a count or a code's error stays.
func TestCodeAfterItsPlaceAndSecondCodes(t *testing.T) {
	expectRedacted(t, map[string]string{
		"yard gate code for Meadowbank Stables 4-2-2-6":     "yard gate code for Meadowbank Stables <SECRET>",
		"keypad code at Pier 9 gate 1782, duress code 9367": "keypad code at Pier 9 gate <SECRET>, duress code <SECRET>",
		"gate code for Elm St lot 8937#, cell to text ops":  "gate code for Elm St lot <SECRET>#, cell to text ops",
		"iPad passcode 080808, manager iPad 271828":         "iPad passcode <SECRET>, manager iPad <SECRET>",
		"rear door code 5488, alarm 6818":                   "rear door code <SECRET>, alarm <SECRET>",
		"error code for request 500":                        "error code for request 500",
		"the door code for unit 12 changes weekly":          "the door code for unit 12 changes weekly",
		"PIN 4321, expires in 2026":                         "PIN <SECRET>, expires in 2026",
	})
}

// After a noun for an account or for the part a person plays, an account
// shaped as one is masked when a credential, a failure or a session
// follows it; words of the interface, a product's name and numbers stay.
func TestAccountAfterItsNoun(t *testing.T) {
	expectRedacted(t, map[string]string{
		"new instructor account tamsin.r temp password Barrel-Wave-1": "new instructor account <USER> temp password <SECRET>",
		"officer percival.r logged in to mobile app":                  "officer <USER> logged in to mobile app",
		"account settings password reset":                             "account settings password reset",
		`set as volunteer Wi-Fi passphrase`:                           `set as volunteer Wi-Fi passphrase`,
		"operator 4471 logged on headset":                             "operator 4471 logged on headset",
	})
}

// A person's name is read wherever it stands, not only after a noun for
// the person a tool serves: after a form of address (Mrs, Mr, Dr), the
// capitalised words that follow; and a given name of the list of given
// names with a family name after it. A given name before a word of the
// dictionary makes a title of a thing (Santa Special, Pascal Compiler), a
// capitalised word before "Dr" a street's, and a hyphen or an apostrophe
// inside a family name keeps it one name.
func TestPeoplesNamesWhereverTheyStand(t *testing.T) {
	expectRedacted(t, map[string]string{
		"visit started at client Mrs Edna Pritchard, 14 Hawthorn":      "visit started at client Mrs <USER>, 14 Hawthorn",
		"patient=Mrs Odalys Ferreira-Quint chair 4":                    "patient=Mrs <USER> chair 4",
		"note: Mr Tuckwell prefers mornings":                           "note: Mr <USER> prefers mornings",
		"referred by Dr. Amara Okafor":                                 "referred by Dr. <USER>",
		`induction complete worker="Tomasz Wierzbicki" card=SP-118204`: `induction complete worker="<USER>" card=SP-118204`,
		"export line: C-2291;Winifred Osei;ward B":                     "export line: C-2291;<USER>;ward B",
		"customer Sean O'Neill and Ann Lloyd-Jones":                    "customer <USER> and <USER>",
		"Katarzyna Nowak signed the consent form":                      "<USER> signed the consent form",
		"pick 1bb8983 footplate: add Santa Special timetable":          "pick 1bb8983 footplate: add Santa Special timetable",
		"Free Pascal Compiler version 3.2.2":                           "Free Pascal Compiler version 3.2.2",
		"Grace Period ends on Friday":                                  "Grace Period ends on Friday",
		// Contact data after a name says whose it is, though the family name is a word.
		"buyer contact Annika Strand mobile +46 555 889 021": "buyer contact <USER> mobile <PHONE>",
		"gift message to Lily Dobbs, lily.d@example.org":     "gift message to <USER>, <EMAIL>",
		"tab opened by Chloe Martin card T-882":              "tab opened by <USER> card T-882", // Martin: a family name that is a word
		"meet at 12 Oak Dr Springfield":                      "meet at <ADDRESS> Springfield",   // a street, no doctor
		"Max Retries exceeded":                               "Max Retries exceeded",
	})
}

// A code's word alone announces a code of four digits or more ("unlocked
// with code 73915", "Locker 9, code 560745") unless its clause says it is
// what something ended with (exited with code 1337, socket closed with
// code 1006) or a noun names its kind (zip code 90210); a password's word
// announces digits as a PIN's; and codes in a list joined by "/" or "and"
// are each one.
func TestBareCodesAndTheirLists(t *testing.T) {
	expectRedacted(t, map[string]string{
		"technician mode unlocked with code 73915 on HD-09":     "technician mode unlocked with code <SECRET> on HD-09",
		`"Your hold is ready. Locker 9, code 560745."`:          `"Your hold is ready. Locker 9, code <SECRET>."`,
		"supervisor cleared with code 8080":                     "supervisor cleared with code <SECRET>",
		"the job exited with code 1337":                         "the job exited with code 1337",
		"WebSocket closed with code 1006":                       "WebSocket closed with code 1006",
		"request failed with code 50031":                        "request failed with code 50031",
		"zip code 90210":                                        "zip code 90210",
		"code 2 of 5":                                           "code 2 of 5",
		"firmware code 1.4.2":                                   "firmware code 1.4.2",
		"remote support session password 5417":                  "remote support session password <SECRET>",
		"password 2 of 3 attempts":                              "password 2 of 3 attempts",
		"controlled drug cabinet sign-off pins 7710 / 3392":     "controlled drug cabinet sign-off pins <SECRET> / <SECRET>",
		"door opened; dual-control codes 4471 and 9038 entered": "door opened; dual-control codes <SECRET> and <SECRET> entered",
		"the pins 1 and 2 are shorted":                          "the pins 1 and 2 are shorted",
		// What a code opens names it (a lock); a SIM's unlock key is a PIN's kin.
		"lakeside boathouse lock 3333":    "lakeside boathouse lock <SECRET>",
		"modem SIM PIN 3141 PUK 40642414": "modem SIM PIN <SECRET> PUK <SECRET>",
		"lock wait timeout 50":            "lock wait timeout 50",
		// A code in dash-joined groups of three or four digits; a year and a date stay.
		"release code for all cabinets is 0918-7724, stored": "release code for all cabinets is <SECRET>, stored",
		"door code 401-882-193":                              "door code <SECRET>",
		"build code 2026-1204 ready":                         "build code 2026-1204 ready",
	})
}

// dictionaryWord finds every word of its list, in small letters or
// capitalised, and no word that is not there.
func TestDictionaryWord(t *testing.T) {
	n := 0
	for _, w := range strings.Split(strings.TrimSuffix(englishWordList, "\n"), "\n") {
		if !dictionaryWord([]byte(w)) || !dictionaryWord([]byte(strings.ToUpper(w[:1])+w[1:])) {
			t.Fatalf("dictionaryWord(%q) = false", w)
		}
		if dictionaryWord([]byte(w + "qx")) {
			t.Fatalf("dictionaryWord(%q) = true", w+"qx")
		}
		n++
	}
	if n < 30000 {
		t.Fatalf("%d words in the list", n)
	}
	for _, w := range []string{"", "Wierzbicki", "zzzzzz", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		if dictionaryWord([]byte(w)) {
			t.Errorf("dictionaryWord(%q) = true", w)
		}
	}
}

// Where a person lives and when they were born say who a record is about
// as their name does: a street address (a house's number, then
// capitalised words ending in a street's type) and a date after a word
// for birth, in a key, a JSON member or prose. A number before capitalised
// words of no street, and a date after any other word, stay.
func TestAddressesAndDatesOfBirth(t *testing.T) {
	expectRedacted(t, map[string]string{
		"leave in porch at 8 Quarry Rd. Thanks":            "leave in porch at <ADDRESS> Thanks",
		"C-2291;Winifred Osei;22 Mill Lane;keysafe=1964":   "C-2291;<USER>;<ADDRESS>;keysafe=<SECRET>",
		"221B Baker Street, London":                        "<ADDRESS>, London",
		"run 3 Node Cluster tests":                         "run 3 Node Cluster tests",
		"version 2 Road Map":                               "version 2 Road Map",
		"R-1142,DOB 1938-04-02,allergy=penicillin":         "R-1142,DOB <BIRTH_DATE>,allergy=penicillin",
		`{"date_of_birth":"1990-01-31","ward":"B"}`:        `{"date_of_birth":"<BIRTH_DATE>","ward":"B"}`,
		"patient born 02/04/1938 admitted":                 "patient born <BIRTH_DATE> admitted",
		"D.O.B.: 2.4.1938":                                 "D.O.B.: <BIRTH_DATE>",
		"released 2024-01-02, born in a day":               "released 2024-01-02, born in a day",
		"birthday party on 2026-12-24T18:00 at the office": "birthday party on 2026-12-24T18:00 at the office",
	})
}

// A '#' between two words of a token with a digit is a password's symbol
// (Blister#Line4), as '!' after a word and its digits is (Uld2026!): no
// name has them so. An issue's or an item's number after '#', a file's
// anchor and a pattern's '$' or a type's '?' stay.
func TestSymbolsInsidePasswords(t *testing.T) {
	expectRedacted(t, map[string]string{
		"verifier entered Blister#Line4":               "verifier entered <SECRET>",
		`wifi key "BlueLine#Dock14"`:                   `wifi key "<SECRET>"`,
		"last attempt with Uld2026!, locked":           "last attempt with <SECRET>, locked",
		"see PR#42 and item#3":                         "see PR#42 and item#3",
		"quote#Q-22871 sent":                           "quote#Q-22871 sent",
		"see [LoggerOption](loggeroption.go#L25) here": "see [LoggerOption](loggeroption.go#L25) here",
		"go test -bench 'Sum64$'":                      "go test -bench 'Sum64$'",
		"can pack negative int64?":                     "can pack negative int64?",
	})
}

// A number in national form ends before a colon that ends a clause (next
// of kin 07700 900512: …), not before one that a time's or a port's
// digits follow; a local number follows any word for reaching a person
// (contact, callback=).
func TestPhonesBeforeAColonAndAfterContact(t *testing.T) {
	expectRedacted(t, map[string]string{
		"sms sent to next of kin 07700 900512: visit complete": "sms sent to next of kin <PHONE>: visit complete",
		"callback=555-0148 nature=FALL":                        "callback=<PHONE> nature=FALL",
		"parent consent signed, contact 555-0178":              "parent consent signed, contact <PHONE>",
		"meeting at 0800 1234:56":                              "meeting at 0800 1234:56",
		"contact 2 of 5 failed":                                "contact 2 of 5 failed",
	})
}

// After "by", the agent of what a log tells, a person's login is masked: two
// parts of small letters joined by '.' or '_' where the first is a given
// name, or an initial or a rank before a family name that is no word of
// the dictionary. What a step, a file or a column is named by stays.
func TestLoginsAfterBy(t *testing.T) {
	expectRedacted(t, map[string]string{
		"locker 112 opened by det.varga at 10:15":       "locker 112 opened by <USER> at 10:15",
		"client secret rotated by winifred_marsh":       "client secret rotated by <USER>",
		"job started by eudora.bpt using svc":           "job started by <USER> using svc",
		"fixed by restart_server and kill_instance":     "fixed by restart_server and kill_instance",
		"signed by ca.cert.pem":                         "signed by ca.cert.pem",
		"rows grouped by user_id, sorted by created_at": "rows grouped by user_id, sorted by created_at",
		"reviewed by qc_review":                         "reviewed by qc_review",
		"written by os.path":                            "written by os.path",
	})
}

// The one token that ends a clause after the colon of a password's
// announcement is its value (wifi password for guests: x), as after
// "password:" itself; a word of state, a link or a sentence stays. A
// card's security code is three or four digits after its name.
func TestValueAfterAnnouncementsColonAndCardCodes(t *testing.T) {
	expectRedacted(t, map[string]string{
		"lounge wifi password for accredited guests: cinephile-popcorn": "lounge wifi password for accredited guests: <SECRET>",
		"Guest Wi-Fi code for reservation 8830271: Football!":           "Guest Wi-Fi code for reservation 8830271: <SECRET>",
		"password for db: see the vault entry":                          "password for db: see the vault entry",
		"[sudo] password for alice:":                                    "[sudo] password for <USER>:",
		"password reset link for you: https://app.example/r/abc":        "password reset link for you: https://app.example/r/abc",
		"card ending 4411 entered CVV 902 and PIN 7713":                 "card ending 4411 entered CVV <SECRET> and PIN <SECRET>",
		"cvv 1.2.3 library":                                             "cvv 1.2.3 library",
	})
}

// The lists keep what their READMEs say: no given name is a word of the
// dictionary (it would read titles as names), every family name of
// family-words.txt is one (else the list has no use), and each line of
// both is found as a name.
func TestNameListsAgainstTheDictionary(t *testing.T) {
	for _, n := range strings.Split(strings.TrimSuffix(givenNameList, "\n"), "\n") {
		if !givenName([]byte(n)) || dictionaryWord([]byte(n)) {
			t.Fatalf("given name %q: found %v, a dictionary word %v", n, givenName([]byte(n)), dictionaryWord([]byte(n)))
		}
	}
	for _, n := range strings.Split(strings.TrimSuffix(familyWordList, "\n"), "\n") {
		if !familyWord([]byte(n)) || !dictionaryWord([]byte(n)) {
			t.Fatalf("family name %q: found %v, a dictionary word %v", n, familyWord([]byte(n)), dictionaryWord([]byte(n)))
		}
	}
}

// "pass" names a password only after an account, a role or an endpoint:
// alone it is a ticket, a step or a verb.
func TestPassAfterAnAccount(t *testing.T) {
	expectRedacted(t, map[string]string{
		"radio room: login c.tregarthen pass Gale#Force27":            "radio room: login <USER> pass <SECRET>",
		"portal user ops@print.example pass Cyan-Plate-K9":            "portal user <EMAIL> pass <SECRET>",
		"mixer remote ws://192.0.2.50:4455 pass mixer-night-41":       "mixer remote ws://<IP> pass <SECRET>",
		"buzzer hub admin pass lantern":                               "buzzer hub admin pass <SECRET>",
		"season pass holders exported":                                "season pass holders exported",
		"boarding pass BP-2231X printed for seat 12A":                 "boarding pass BP-2231X printed for seat 12A",
		"admin pass rate is 80%":                                      "admin pass rate is 80%",
		"the admin pass is required":                                  "the admin pass is required",
		"operator jdoe pass-through enabled for the night shift only": "operator jdoe pass-through enabled for the night shift only",
	})
}

// The value a line gives as the one before a secret it masks is masked
// too: x (was y), from y to x, old=y new=x; a value of another kind, or
// prose, in those places is not.
func TestFormerValuesOfASecret(t *testing.T) {
	expectRedacted(t, map[string]string{
		"night-entry door code changed to 2719 (was 1844)":      "night-entry door code changed to <SECRET> (was <SECRET>)",
		"key safe combination 0852 (old 7429)":                  "key safe combination <SECRET> (old <SECRET>)",
		"action=change_password old=Lilies2019 new=Lilies2020!": "action=change_password old=<SECRET> new=<SECRET>",
		"door code changed from 1844 to 2719":                   "door code changed from <SECRET> to <SECRET>",
		"door code changed to 2719 (was: unset)":                "door code changed to <SECRET> (was: unset)",
		"door code changed to 2719 (was 3 days ago)":            "door code changed to <SECRET> (was 3 days ago)",
		"price changed from 12 to 14 (was 10)":                  "price changed from 12 to 14 (was 10)",
		"door code changed to 2719 (was ABCD-relay-2)":          "door code changed to <SECRET> (was ABCD-relay-2)",
	})
}

// What opens "with" a code's digits, ending the clause, opens with its
// code; a count after "with" is none.
func TestCodeAVerbOfOpeningNames(t *testing.T) {
	expectRedacted(t, map[string]string{
		"the box by the drying room opens with 6-0-3-1, tell only booked guests": "the box by the drying room opens with <SECRET>, tell only booked guests",
		"the side gate unlocks with 4471#":                                       "the side gate unlocks with <SECRET>",
		"the session opened with 1200 rows loaded":                               "the session opened with 1200 rows loaded",
		"port 8080 opened with 12 connections":                                   "port 8080 opened with 12 connections",
	})
}

// A protocol's name is a setting of the credential the key names, not
// the credential (SNMP v3's authProtocol and privProtocol).
func TestProtocolOfACredential(t *testing.T) {
	expectRedacted(t, map[string]string{
		"snmp v3 authProtocol=SHA-256 privProtocol=AES-128": "snmp v3 authProtocol=SHA-256 privProtocol=AES-128",
		"snmp v3 authPassword=Relay-Night-42":               "snmp v3 authPassword=<SECRET>",
	})
}

// The capitalised words a personal e-mail address in the text spells
// (given.family@, given.f@) name its owner, with the name's other word
// beside them; an address of one word, or parts that are words, spell no
// one.
func TestNamesAnAddressSpells(t *testing.T) {
	expectRedacted(t, map[string]string{
		`export row: 10217,"Okonkwo, Adaeze",adaeze.okonkwo@example.org,USD,1404.55`: `export row: 10217,"<USER>, <USER>",<EMAIL>,USD,1404.55`,
		`lead row: "Harlan","Whitcombe","+1 555 0175 662","harlan.w@example.net"`:    `lead row: "<USER>","<USER>","<PHONE>","<EMAIL>"`,
		"recall row: Ellison Moorcroft,+44 7700 900218,ellison.m@example.net":        "recall row: <USER> <USER>,<PHONE>,<EMAIL>",
		"Report from Jenkins: build failed, mail sent to jenkins@ci.example.com":     "Report from Jenkins: build failed, mail sent to <EMAIL>",
		"Rose Garden booking by rose.hill@example.com":                               "Rose Garden booking by <EMAIL>",
	})
}

// Words right after a password's noun that end the clause, none of them a
// log's own word about a password, are its pass phrase; prose is not.
func TestPassPhraseOfWordsAfterItsNoun(t *testing.T) {
	expectRedacted(t, map[string]string{
		"headset HS-0912, voice password seven seven banana":                        "headset HS-0912, voice password <SECRET>",
		"Lieber Gast, das WLAN-Passwort granite basil fjord falcon":                 "Lieber Gast, das WLAN-Passwort <SECRET>",
		"password changed successfully":                                             "password changed successfully",
		"password must contain at least 12 characters":                              "password must contain at least 12 characters",
		"password policy updated by admin":                                          "password policy updated by admin",
		"some malformed inputs can still expose password text in an error.":         "some malformed inputs can still expose password text in an error.",
		"¿Olvidó su contraseña? La contraseña debe tener al menos ocho caracteres.": "¿Olvidó su contraseña? La contraseña debe tener al menos ocho caracteres.",
	})
}

// Announced values in more of the forms people write them: words joined
// by dashes, a pronoun after the clause's comma, a keypad's '#' or a
// parenthesis around a code's digits, three digits for a lock's
// combination, and a pass phrase's key with its words to the line's end;
// a placeholder's words are no keywords.
func TestAnnouncedInTheFormsPeopleWrite(t *testing.T) {
	expectRedacted(t, map[string]string{
		"the hotline password is blue-wave-bus; never read it out":   "the hotline password is <SECRET>; never read it out",
		"the hotline password, it is ember-harbor-14":                "the hotline password, it is <SECRET>",
		"the gate code to the pier office, it is 3318#":              "the gate code to the pier office, it is <SECRET>#",
		`dropoff note="gate code #4402"`:                             `dropoff note="gate code #<SECRET>"`,
		"the alarm code (55190) goes to the location manager only":   "the alarm code (<SECRET>) goes to the location manager only",
		"luggage padlock combination set to 319 by owner":            "luggage padlock combination set to <SECRET> by owner",
		"locker 118 assigned to the night shift":                     "locker 118 assigned to the night shift",
		"hub registered wifi ssid=Lowry-Home psk=roses are red 1952": "hub registered wifi ssid=Lowry-Home psk=<SECRET>",
		"psk=x1y2z3 channel=6":                                       "psk=<SECRET> channel=6",
		"DIARYPAD_SMTP_PASS=<from secret store>":                     "DIARYPAD_SMTP_PASS=<from secret store>",
		"the password is up-to-date":                                 "the password is up-to-date",
	})
}

// A setting's word after a preposition is prose, and the announcement goes
// on (PIN on file: 2468); right after the credential's word it names a
// setting (password length is 12).
func TestSettingWordAfterAPreposition(t *testing.T) {
	expectRedacted(t, map[string]string{
		"Reply with your 4-digit PIN. PIN on file: 2468": "Reply with your 4-digit PIN. PIN on file: <SECRET>",
		"the PIN on file is 2468":                        "the PIN on file is <SECRET>",
		"admin password from env: Komi-6.5-points":       "admin password from env: <SECRET>",
		"password length is 12":                          "password length is 12",
		"password of length 12 required":                 "password of length 12 required",
	})
}

// What a login or an unlocking was done "with", shaped as a password; a
// network's key after its quoted name; a phrase quoted after its noun; an
// override's code named by whose authority it carries.
func TestCredentialsByWhatTheyDo(t *testing.T) {
	expectRedacted(t, map[string]string{
		"the DIT logged in on the cart laptop with LutBox_2026":           "the DIT logged in on the cart laptop with <SECRET>",
		"supervisor unlocked the call-taker console with ember-harbor-14": "supervisor unlocked the call-taker console with <SECRET>",
		"logged in with SSO":                                                   "logged in with SSO",
		"connected with TLSv1.3":                                               "connected with TLSv1.3",
		"Linux: open files with close-on-exec":                                 "Linux: open files with close-on-exec",
		`science party wifi "RV-Skarv-Sci" key plankton2026`:                   `science party wifi "RV-Skarv-Sci" key <SECRET>`,
		`production office wifi "HarrowOffice" key StandbyRolling!`:            `production office wifi "HarrowOffice" key <SECRET>`,
		`menu "File" key F2`:                                                   `menu "File" key F2`,
		`confirmation phrase "harbour lantern seven" read back over the phone`: `confirmation phrase "<SECRET>" read back over the phone`,
		`the phrase for the night watch is "blue heron over the breakwater"`:   `the phrase for the night watch is "<SECRET>"`,
		`HTTP reason phrase "Not Found"`:                                       `HTTP reason phrase "Not Found"`,
		"shop till manager override 9911":                                      "shop till manager override <SECRET>",
		"config override 2026 applied":                                         "config override 2026 applied",
	})
}

// What only looks like a person or an account at a machine: capitalised
// words before a company's suffix name a company, and a package resolved
// by a protocol to a version (yarn's lockfile) is no account at a host.
func TestCompaniesAndResolvedPackages(t *testing.T) {
	expectRedacted(t, map[string]string{
		"ticket printed, order 2026-4471 customer Harbour Civil Ltd": "ticket printed, order 2026-4471 customer Harbour Civil Ltd",
		"invoice for customer Harriet Nwosu":                         "invoice for customer <USER>",
		`resolution: "srt-parser@npm:2.2.3"`:                         `resolution: "srt-parser@npm:2.2.3"`,
		"scp backup@db01:/srv/x .":                                   "scp <USER>@<HOST>:/srv/x .",
		"psql: using password from pgpass for orders@pg-main:5432":   "psql: using password from pgpass for <USER>@<HOST>:5432",
	})
}

// Contact data two words after a name (sent to, reached at) says whose it
// is, as one word (mobile) did.
func TestContactTwoWordsAfterAName(t *testing.T) {
	expectRedacted(t, map[string]string{
		"reminder for Theodora Quill sent to +44 7700 900205": "reminder for <USER> sent to <PHONE>",
		"Santa Special sent to 3 stores":                      "Santa Special sent to 3 stores",
	})
}

// A code's or a lock's noun governs the first code of its sentence,
// however many words between say what it opens or who asked; a number
// that is another noun's, a time, a count, a quantity or a year is not
// it, nor is a code of an outcome's or a public kind.
func TestCodeOfItsSentence(t *testing.T) {
	expectRedacted(t, map[string]string{
		"locker room passcode for the east wing night staff -> 552190":            "locker room passcode for the east wing night staff -> <SECRET>",
		"keypad on the loading dock (ask Tom first) takes 7713#":                  "keypad on the loading dock (ask Tom first) takes <SECRET>#",
		"PIN typed at the gate (try 1 of 3 left), expected 4410, card held":       "PIN typed at the gate (try 1 of 3 left), expected <SECRET>, card held",
		"PIN rejected twice (try 1 of 3 left), expected 4410, card held":          "PIN rejected twice (try 1 of 3 left), expected 4410, card held",
		"lockbox behind the meter cabinet, 3-8-1-5. Ring first.":                  "lockbox behind the meter cabinet, <SECRET>. Ring first.",
		"the apartment buzzer 3307 then the lift":                                 "the apartment buzzer <SECRET> then the lift",
		"code review for branch 4412 took 1200 ms":                                "code review for branch 4412 took 1200 ms",
		"safe mode since 2019, restarted at 0600":                                 "safe mode since 2019, restarted at 0600",
		"PIN length 6, lockout after 5 tries":                                     "PIN length 6, lockout after 5 tries",
		"connection failed with code 4001 after retry 2":                          "connection failed with code 4001 after retry 2",
		"zip code for the depot is 90210":                                         "zip code for the depot is 90210",
		"lockbox serviced in 2024, padlock on gate 3":                             "lockbox serviced in 2024, padlock on gate 3",
		"code coverage of the module reached 8120 lines. PIN 2 of 4 is the dock.": "code coverage of the module reached 8120 lines. PIN 2 of 4 is the dock.",
	})
}

// A code's noun names a code of letters too, when the letters read as no
// words, or digits interleave them; a word, a name and its number, or a
// public code stays.
func TestCodeOfLetters(t *testing.T) {
	expectRedacted(t, map[string]string{
		"guests join the session with code KWPZRTLX today":       "guests join the session with code <SECRET> today",
		"locker-cli --code QR7MZ2 --slot 4":                      "locker-cli --code <SECRET> --slot 4",
		"pickup code is 4XKTQ, show it at the counter":           "pickup code is <SECRET>, show it at the counter",
		"code RED on ward 4, promo code SUMMER, country code GB": "code RED on ward 4, promo code SUMMER, country code GB",
		"the code doesn't compile; returned code E1234":          "the code doesn't compile; returned code E1234",
		"source code UTF8 ISO8859 and code review":               "source code UTF8 ISO8859 and code review",
	})
}

// An account named for its role is public on its own, but beside a
// password in the clear it is the other half of the credential: it is
// masked then; the accounts every installation has stay.
func TestRoleAccountBesideASecret(t *testing.T) {
	expectRedacted(t, map[string]string{
		"sync user=backup_reader password=Tern!field42":        "sync user=<USER> password=<SECRET>",
		`{"username":"svc_ledger","password":"x9!Kelp-Ridge"}`: `{"username":"<USER>","password":"<SECRET>"}`,
		"sync user=backup_reader password=${READER_PW}":        "sync user=backup_reader password=${READER_PW}",
		"sync user=backup_reader connected":                    "sync user=backup_reader connected",
		"user=admin password=Tern!field42":                     "user=admin password=<SECRET>",
	})
}

// An account and its password written NAME / PASS may stand a few words
// after the account's word, past the account's role or whom it is for, in
// the same clause; a network's name and its passphrase after its word.
func TestPairAfterItsWord(t *testing.T) {
	expectRedacted(t, map[string]string{
		"kiosk login for the night porter is desk2 / Lantern55!": "kiosk login for the night porter is <USER> / <SECRET>",
		"guest wifi Harbour-Guest / pebble-moon-71 at reception": "guest wifi Harbour-Guest / <SECRET> at reception",
		"wifi 2.4GHz / 5GHz on the guest network":                "wifi 2.4GHz / 5GHz on the guest network",
		"login via SSO / LDAP, account read / write":             "login via SSO / LDAP, account read / write",
		"login page, then settings / Security2":                  "login page, then settings / Security2",
	})
}

// Beside a credential in the clear, the handles its people go by are
// masked: an initial and a family name, a given name and more, a name
// with a number after a word that introduces an account; a logger's, a
// file's or a setting's dotted name stays, and so does any handle in a
// text that exposes no secret.
func TestHandlesBesideASecret(t *testing.T) {
	expectRedacted(t, map[string]string{
		"relief porter k.abernethy badge PIN 5521 issued":            "relief porter <USER> badge PIN <SECRET> issued",
		"steward login maren.holt pass Quayside!77":                  "steward login <USER> pass <SECRET>",
		"temporary password Kettle-Moor-4 issued for desk7":          "temporary password <SECRET> issued for <USER>",
		"WARN sms.gateway password Kettle-Moor-4 stored in cfg.yaml": "WARN sms.gateway password <SECRET> stored in cfg.yaml",
		"db.name=orders db.pass=Kettle-Moor-4":                       "db.name=orders db.pass=<SECRET>",
		"relief porter k.abernethy on shift, handed over to desk7":   "relief porter k.abernethy on shift, handed over to desk7",
	})
}

// A mnemonic is the words after the last word of grammar of a run of
// short lower-case words, when the words that announce it run into it; a
// sentence of as many words holds words of grammar throughout.
func TestSeedPhrase(t *testing.T) {
	expectRedacted(t, map[string]string{
		"restored the team wallet from mnemonic orbit velvet canyon maple drift oyster lunar pencil quiet ranch tiger fossil harbor mango clay": "restored the team wallet from <SECRET>",
		"the seed of the idea was that every team should own the tests they write for the code they ship":                                       "the seed of the idea was that every team should own the tests they write for the code they ship",
		"mnemonic devices help students recall the order of the planets in the night sky":                                                       "mnemonic devices help students recall the order of the planets in the night sky",
		"packages curl wget unzip jq git make gcc perl ruby rsync tmux htop installed":                                                          "packages curl wget unzip jq git make gcc perl ruby rsync tmux htop installed",
	})
}

// After the word "account", eight to seventeen digits are an account's
// number, a bank's or a cloud's; a shorter number, or one that goes on as
// a version or a code, is not.
func TestAccountNumberAfterItsWord(t *testing.T) {
	expectRedacted(t, map[string]string{
		"refund sent to account 40219377105 ref 20-00-00":         "refund sent to account <ACCOUNT> ref 20-00-00",
		"account 4021 locked; account 12345678-A; acct #99120433": "account 4021 locked; account 12345678-A; acct #<ACCOUNT>",
		"sort code 12-34-56 account number 12345678":              "sort code <SECRET> account number <ACCOUNT>",
		"account no.: 40219377105; account number 4021 locked":    "account no.: <ACCOUNT>; account number 4021 locked",
	})
}

// A one-time password's noun governs its code as a code's does.
func TestOneTimeCodeOfItsSentence(t *testing.T) {
	expectRedacted(t, map[string]string{
		"smart lock OTP for Flat 3, valid 09:00-17:00: 70412288": "smart lock OTP for Flat 3, valid 09:00-17:00: <SECRET>",
	})
}

// A credential's key whose value is itself a key and its value holds the
// pair, read as one (the secret, if any, is the inner key's); a file a
// value includes by "@file:" and a template's "change-me-…" are no
// secrets.
func TestValuesThatAreNoSecret(t *testing.T) {
	expectRedacted(t, map[string]string{
		"signing_keys: current=blue previous=green":  "signing_keys: current=blue previous=green",
		"credentials: token=Ferry-Lamp-82 region=eu": "credentials: token=<SECRET> region=eu",
		"api_secret: Wq7=Lm2pRt9s":                   "api_secret: <SECRET>",
		"webhook_secret=@file:/var/run/hooks/secret": "webhook_secret=@file:/var/run/hooks/secret",
		"JWT_SECRET=change-me-before-deploy":         "JWT_SECRET=change-me-before-deploy",
		"JWT_SECRET=archive-me-please":               "JWT_SECRET=<SECRET>",
	})
}

// An element's text ends at a tag; after a word in angle brackets, text
// that runs to the line's end is prose around a template's placeholder.
func TestPlaceholderInAngleBrackets(t *testing.T) {
	expectRedacted(t, map[string]string{
		`texts "ARM <pin>" (see the door runbook)`:           `texts "ARM <pin>" (see the door runbook)`,
		"send `Bearer <token>` with every request":           "send `Bearer <token>` with every request",
		"<config><password>Tern!field42</password></config>": "<config><password><SECRET></password></config>",
	})
}

// The seed word list holds some words of grammar (about, this, you, also):
// a mnemonic that draws them is one all the same; the words of grammar it
// lacks (the, and, with) still make a run prose.
func TestMnemonicWithTheListsGrammar(t *testing.T) {
	expectRedacted(t, map[string]string{
		"seed: orbit velvet about canyon maple this drift oyster you lunar pencil also": "seed: <SECRET>",
		"orbit velvet and canyon maple with the drift oyster lunar pencil ranch tiger":  "orbit velvet and canyon maple with the drift oyster lunar pencil ranch tiger",
	})
}

// One word of the dictionary after a credential and "is", "was", "set to"
// or "changed to", ending its clause, is the credential; a word that tells
// its state is not. A security, memorable or duress word is a credential.
func TestOneWordAfterIs(t *testing.T) {
	expectRedacted(t, map[string]string{
		"customer password on account is gooseberry":      "customer password on account is <SECRET>",
		"the security word is Gooseberry.":                "the security word is <SECRET>.",
		"memorable word was sunflower, per the caller":    "memorable word was <SECRET>, per the caller",
		"kiosk password changed to lantern":               "kiosk password changed to <SECRET>",
		"the password is expired":                         "the password is expired",
		"password is required":                            "password is required",
		"the token was revoked; the password is optional": "the token was revoked; the password is optional",
		"no passphrase was given.":                        "no passphrase was given.",
		"the password is different":                       "the password is different",
		"the word is out":                                 "the word is out",
		"password set to default":                         "password set to default",
	})
}

// A person named after their part is masked whether the tool serves them
// or they work for it (inspector, officer, author), with a third name that
// is no word; a company's name after the noun stays.
func TestPersonAfterTheirPart(t *testing.T) {
	expectRedacted(t, map[string]string{
		"inspection I-55012 inspector Nguyen Thi Hoa signed off":    "inspection I-55012 inspector <USER> signed off",
		"submission TS-2026-331 author Saoirse Mulcahy-Brandt":      "submission TS-2026-331 author <USER>",
		`{"msg":"id check bypass","officer":"S. Ruane"}`:            `{"msg":"id check bypass","officer":"<USER>"}`,
		"order 2026-4471 customer Harbour Civil Ltd":                "order 2026-4471 customer Harbour Civil Ltd",
		"order LX-55012 patient Harriet Quinlan Rx R -2.25 L -2.00": "order LX-55012 patient <USER> Rx R -2.25 L -2.00",
		"inspector Support Team paged":                              "inspector Support Team paged",
	})
}

// Four to eight digits that a '#' ends are a keypad's entry, wherever
// they stand; an anchor or an issue's number is none.
func TestKeypadEntry(t *testing.T) {
	expectRedacted(t, map[string]string{
		`text from plant: "scale room door is 1492# now, new one"`: `text from plant: "scale room door is <SECRET># now, new one"`,
		"dial-in conference PIN 448812#":                           "dial-in conference PIN <SECRET>#",
		"see https://example.org/issues/1248#discussion":           "see https://example.org/issues/1248#discussion",
		"ticket #44718 closed":                                     "ticket #44718 closed",
		"press 1# to confirm":                                      "press 1# to confirm",
	})
}

// A dial's groups (one or two digits each, three groups or more) after a
// lock's noun in their sentence are its combination, even right after
// another noun; a phone number's longer groups keep their kind.
func TestDialGroupsAfterAnotherNoun(t *testing.T) {
	expectRedacted(t, map[string]string{
		"ship's safe in chief officer cabin 47-22-91 (docs, passports)": "ship's safe in chief officer cabin <SECRET> (docs, passports)",
		"PIN reset: call 555-123-4567":                                  "PIN reset: call <PHONE>",
		"safe serviced on 2026-01-05 by the vendor":                     "safe serviced on 2026-01-05 by the vendor",
	})
}

// A SQL statement's literals are read from the statement's first keyword,
// so that an apostrophe of the text before it does not pair with the
// statement's quotes, and the numbers before it stay for the other
// passes; a statement that a quote opens is read from that quote.
func TestSQLFromItsStatement(t *testing.T) {
	expectRedacted(t, map[string]string{
		"tidemill: miller's log INSERT INTO logins(user, pw) VALUES ('miller', 'stoneground flour');":  "tidemill: miller's log INSERT INTO logins(user, pw) VALUES (<STR>, <STR>);",
		"order 12 for O'Brien: UPDATE orders SET note = 'leave at door' WHERE id = 7":                  "order 12 for O'Brien: UPDATE orders SET note = <STR> WHERE id = <NUM>",
		"2026-02-12 07:30:01 db[4411] INFO slow query SELECT * FROM orders WHERE customer_id = 593829": "2026-02-12 07:30:01 db[<PID>] INFO slow query SELECT * FROM orders WHERE customer_id = <NUM>",
		"EXECUTE 'UPDATE users SET pw = ''x9Tq'' WHERE id = 1'":                                        "EXECUTE <STR>",
		"WHERE email = 'alice@example.com' AND id = 42":                                                "WHERE email = <STR> AND id = <NUM>",
	})
}

// An SNMP community is its agent's password: named by its protocol or
// its access in prose, it announces its value as a password does; a
// community of people, or a community string's state, is no value.
func TestSNMPCommunityInProse(t *testing.T) {
	expectRedacted(t, map[string]string{
		"INFO lanhall.snmp community string set to fragnet-ro-7 on 14 edge switches": "INFO lanhall.snmp community string set to <SECRET> on 14 edge switches",
		"SNMP community changed to fragnet-ro-7":                                     "SNMP community changed to <SECRET>",
		"read community string is fragnet-ro-7":                                      "read community string is <SECRET>",
		"SNMP read community Gr8tW4ll":                                               "SNMP read community <SECRET>",
		"the community is growing fast":                                              "the community is growing fast",
		"SNMP community string is not set":                                           "SNMP community string is not set",
		"Our community string format is documented":                                  "Our community string format is documented",
		`string("passes")`:                                                           `string("passes")`,
	})
}

// A Windows down-level logon name, DOMAIN\account, is masked whole where a
// pass masks one part of it: the account is the part after the
// backslash. A path's folders and an escaped line break are no domain.
func TestDownLevelLogonName(t *testing.T) {
	expectRedacted(t, map[string]string{
		`logged on as CORP\jsmith from 10.1.1.1`: "logged on as <USER> from <IP>",
		`user ACME\k.tanaka locked out`:          "user <USER> locked out",
		`{"user":"CORP\\jsmith","ok":true}`:      `{"user":"<USER>","ok":true}`,
		`user contoso\jsmith`:                    "user <USER>",
		`saved to C:\Users\alice\x.txt`:          `saved to C:\Users\<USER>\x.txt`,
		`user=ADMIN\nPASS=x`:                     `user=ADMIN\nPASS=<SECRET>`,
	})
}

// A secret's key (API, licence, enrolment, encryption: not a lock's
// master or unlock key) named before a colon is the value after it,
// whatever its shape; a state, a placeholder or a function's name in a
// change log is none.
func TestSecretKeyAfterColon(t *testing.T) {
	expectRedacted(t, map[string]string{
		"enrolment key for course BIO-204: MitoChondria!":         "enrolment key for course BIO-204: <SECRET>",
		"license key: MitoChondria!":                              "license key: <SECRET>",
		"encryption key: correct horse battery staple":            "encryption key: <SECRET>",
		"api key: not set":                                        "api key: not set",
		"network_key: GENERATE":                                   "network_key: GENERATE",
		"X-Api-Key: [REDACTED]":                                   "X-Api-Key: [REDACTED]",
		"\t* cipher/ecc.c (check_secret_key): Ed448 means EdDSA.": "\t* cipher/ecc.c (check_secret_key): Ed448 means EdDSA.",
	})
}

// "Wi-Fi", the trademark's spelling, announces a passphrase as "wifi"
// does; the word after "to" where a verb sends or joins something there
// (connected to, sent to) is a destination, not a changed credential.
func TestWiFiSpelledAndDestinations(t *testing.T) {
	expectRedacted(t, map[string]string{
		"Wi-Fi for rooftop bar this week: backpack-sunset-33": "Wi-Fi for rooftop bar this week: <SECRET>",
		"Wi-Fi: backpack-sunset-33":                           "Wi-Fi: <SECRET>",
		"Wi-Fi: enabled":                                      "Wi-Fi: enabled",
		"Wi-Fi connected to HomeNet":                          "Wi-Fi connected to HomeNet",
		"WiFi connected to HomeNet":                           "WiFi connected to HomeNet",
		"PIN sent to the caller":                              "PIN sent to the caller",
		"password changed to Tulip-77":                        "password changed to <SECRET>",
	})
}

// A traveller's name as airlines print it (SURNAME/GIVEN, a title after
// it or not) after a noun of travel, and a booking's record locator after
// PNR, record locator or booking reference, are masked: the locator and
// the family name open the booking. Capitals joined by a slash elsewhere
// (TCP/IP) and a locator's word (booking code WELCOME) are none.
func TestTravelRecords(t *testing.T) {
	expectRedacted(t, map[string]string{
		"bagtrak.bsm BSM for LH0123 pax MULLER/ANNAKATHARINA pnr XTB1HT": "bagtrak.bsm BSM for LH0123 pax <USER> pnr <ID>",
		"passenger SMITH/JOHN MR seat 14C":                               "passenger <USER> seat 14C",
		"PNR: XTB1HT":                                                    "PNR: <ID>",
		"record locator QWERTY":                                          "record locator <ID>",
		"booking ref: 9Z8Y7X":                                            "booking ref: <ID>",
		"guest TCP/UDP ports":                                            "guest TCP/UDP ports",
		"client HTTP/HTTPS proxy":                                        "client HTTP/HTTPS proxy",
		"pax count 182":                                                  "pax count 182",
		"booking code WELCOME":                                           "booking code WELCOME",
	})
}

// A card's or a badge's number (six to nineteen digits, '#' before them
// or not) says whose it is, and is masked as an id; a card's size, count
// or slot, an amount and a date are none.
func TestCardAndBadgeNumbers(t *testing.T) {
	expectRedacted(t, map[string]string{
		`user "cashier7" authenticated with card 9122371330`: `user "<USER>" authenticated with card <ID>`,
		"staff card #448812 swiped":                          "staff card <ID> swiped",
		"Badge 004821 (PIN 2051) granted":                    "Badge <ID> (PIN <SECRET>) granted",
		"SD card 32GB":                                       "SD card 32GB",
		"card 1 of 3":                                        "card 1 of 3",
		"card 123456.78 paid":                                "card 123456.78 paid",
		"card 2026-01-01":                                    "card 2026-01-01",
		"member card 00481 entered zone=bowl":                "member card 00481 entered zone=bowl",
	})
}

// After "password for", a place, and a colon that ends it, the value is
// the place's password whatever its shape, as after the password's own
// colon; a state or a pointer elsewhere is none.
func TestPasswordAfterPlaceAndColon(t *testing.T) {
	expectRedacted(t, map[string]string{
		`sales agent wants the password for "The Salt Harvest" screener: saltharvest!press`: `sales agent wants the password for "The Salt Harvest" screener: <SECRET>`,
		`password for "The Salt Harvest" screener: not set`:                                 `password for "The Salt Harvest" screener: not set`,
		`password for "Main Hall" kiosk: see vault`:                                         `password for "Main Hall" kiosk: see vault`,
	})
}

// A user's folder on a share that holds one per user (Samba's homes,
// a file server's home, users or profiles share) is the user's name, in
// a UNC path or its forward-slash form; another share's folder, a shared
// home and a URL's path are none.
func TestHomeShareFolders(t *testing.T) {
	expectRedacted(t, map[string]string{
		`mapped \\filer01\homes\alice.w to H:`:   `mapped \\filer01\homes\<USER> to H:`,
		`copy \\srv\users\j.smith\Desktop\a.txt`: `copy \\srv\users\<USER>\Desktop\a.txt`,
		"exported to //nas/home/fmorrison/x.csv": "exported to //nas/home/<USER>/x.csv",
		`path \\srv\share\reports\x`:             `path \\srv\share\reports\x`,
		"mount //nas/home/Public":                "mount //nas/home/Public",
		"see https://example.com/users/alice":    "see https://example.com/users/alice",
	})
}

// A licence key in groups of one length: four groups or more, one mixing
// capitals and digits and three at least that mix them or spell no word,
// is generated; groups of words are not.
func TestLetterGroupsOfALicenceKey(t *testing.T) {
	expectRedacted(t, map[string]string{
		"MORTARPESTLE_LICENSE=23CN-IDOR-GNKZ-LQLW": "MORTARPESTLE_LICENSE=<ID>",
		"TEST-CODE-DEMO-1234":                      "TEST-CODE-DEMO-1234",
		"ABCD-EFGH":                                "ABCD-EFGH",
	})
}

// The commands that hash or store a password take it where their manuals
// say: openssl passwd's and mkpasswd's first argument, slappasswd -s,
// caddy hash-password --plaintext, doveadm pw -p, mosquitto_passwd -b
// FILE USER PASS; a flag that takes another value is skipped.
func TestPasswordHashers(t *testing.T) {
	expectRedacted(t, map[string]string{
		"doveadm pw -s ARGON2ID -p 'embark arctic pepper visa'": "doveadm pw -s ARGON2ID -p '<SECRET>'",
		"openssl passwd -6 Tulip77x":                            "openssl passwd -6 <SECRET>",
		"mkpasswd -m sha-512 Tulip77x":                          "mkpasswd -m sha-512 <SECRET>",
		"slappasswd -h {SSHA} -s 'two words'":                   "slappasswd -h {SSHA} -s '<SECRET>'",
		"caddy hash-password --plaintext Tulip77x":              "caddy hash-password --plaintext <SECRET>",
		"mosquitto_passwd -b passwd alice Tulip77x":             "mosquitto_passwd -b passwd <USER> <SECRET>",
		"openssl passwd -stdin < pw.txt":                        "openssl passwd -stdin < pw.txt",
		"mkpasswd --help":                                       "mkpasswd --help",
		"the passwd file is /etc/passwd":                        "the passwd file is /etc/passwd",
	})
}

// An IBAN whose ISO 7064 check holds is a bank account's, together or in
// its printed groups of four; one that fails its check is none.
func TestIBANByItsCheck(t *testing.T) {
	expectRedacted(t, map[string]string{
		"IBAN GB82WEST12345698765432":               "IBAN <ACCOUNT>",
		"pay to GB82 WEST 1234 5698 7654 32 today":  "pay to <ACCOUNT> today",
		"refund to NL91ABNA0417164300.":             "refund to <ACCOUNT>.",
		"IBAN GB82WEST12345698765433 (check fails)": "IBAN GB82WEST12345698765433 (check fails)",
	})
}

// An identity document's number after its noun, or after "number" (no,
// nr) after it, says who its holder is: a passport's, a driver's
// licence's, an ID card's, a national insurance or NHS number. A
// product's licence, a document's date or photo size is none.
func TestIdentityDocumentNumbers(t *testing.T) {
	expectRedacted(t, map[string]string{
		"passport number 533812749":           "passport number <ID>",
		"passport no: X1234567 checked":       "passport no: <ID> checked",
		"driver license D1234567 exp 2029":    "driver license <ID> exp 2029",
		"national insurance number QQ123456C": "national insurance number <ID>",
		"ID card 8812-4471-2290":              "ID card <ID>",
		"NHS number 9434765919":               "NHS number <ID>",
		"software license 123456":             "software license 123456",
		"passport 2026-01-01":                 "passport 2026-01-01",
		"passport photo 1200x800":             "passport photo 1200x800",
		"permit SP-88412 status APPROVED":     "permit SP-88412 status APPROVED",
	})
}
