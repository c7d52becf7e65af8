package redact

import "testing"

// A code named by what it grants (getting in, unlocking, overriding,
// proving who one is) is a secret, though the word that names it is one of
// prose; a code of a public scheme is not.
func TestCodesNamedByWhatTheyGrant(t *testing.T) {
	expectRedacted(t, map[string]string{
		"kiosk service code 731905 accepted":                      "kiosk service code <SECRET> accepted",
		"ticket validation code 4419027735 printed":               "ticket validation code <SECRET> printed",
		"guest check-in code 662013 sent":                         "guest check-in code <SECRET> sent",
		"handheld unlock 908812; scanner ready":                   "handheld unlock <SECRET>; scanner ready",
		"refund authorization 551902, amount 12.00":               "refund authorization <SECRET>, amount 12.00",
		"scale pairing key 308812 saved":                          "scale pairing key <SECRET> saved",
		"backup codes 7gk2p-x9q4m ab3de-5fgh2 zz7c1-q0p3r issued": "backup codes <SECRET> <SECRET> <SECRET> issued",
		"recovery codes [k3m9x-2pq7d, w8v2c-7ht4e] shown once":    "recovery codes [<SECRET>, <SECRET>] shown once",
	})
	expectKept(t,
		"exit code 1234, status code 4040, error code 1045",
		"the service code path and the validation code were reviewed in 2024",
		"tracking code 4471 and product code 99120 listed",
		"recovery codes are shown once and then hidden",
	)
}

// An answer to a security question is the name after it, of one word or
// several, past the question's gist in parentheses, an '=' or a colon.
func TestSecurityAnswers(t *testing.T) {
	expectRedacted(t, map[string]string{
		`signup question "street you grew up on" answer=Maple Hollow`: `signup question "street you grew up on" answer=<SECRET>`,
		"security answer (first school) = Hazelwood Primary":          "security answer (first school) = <SECRET>",
		"security answer (father's middle name) Ambrose noted":        "security answer (father's middle name) <SECRET> noted",
		"security answer: Orla Penhallow":                             "security answer: <SECRET>",
	})
	expectKept(t,
		"Security answer: The answer is stored hashed.",
		"security answer: must be 4 characters",
		"answer: Yes",
	)
}

// A credential word announces its value across a few words and an '='
// between spaces, and a short password of letters and digits is one.
func TestAnnouncedAcrossEquals(t *testing.T) {
	expectRedacted(t, map[string]string{
		"Kennwort Leitstand = tulpe44":        "Kennwort Leitstand = <SECRET>",
		"clave del panel: Ladera-roble-nube5": "clave del panel: <SECRET>",
		"the password is fern8 now":           "the password is <SECRET> now",
	})
	expectKept(t,
		"the password is md5 and sha1",
		"password hash is bcrypt",
		"Kennwort Länge = 12",
	)
}

// A setter method of a credential's member takes its value.
func TestSetterOfACredentialMember(t *testing.T) {
	expectRedacted(t, map[string]string{
		`cfg.smtp.password.set("loud otter canyon")`: `cfg.smtp.password.set("<SECRET>")`,
		`opts.Token.Set("kp2-88shw")`:                `opts.Token.Set("<SECRET>")`,
	})
	expectKept(t,
		`settings.server.port.set("8080")`,
		`x.password.set(nil)`,
	)
}

// An account of a given name and an initial is a person's after by, to,
// for or a person's part; a key that names who did or owns a thing holds
// an account.
func TestAccountsWherePeopleStand(t *testing.T) {
	expectRedacted(t, map[string]string{
		"refund approved by ottilie_m at noon":         "refund approved by <USER> at noon",
		"shift handed to k_ravensdale, ok":             "shift handed to <USER>, ok",
		"courier j.abernathy picked up parcel 7":       "courier <USER> picked up parcel 7",
		"crew lead=thaddeus_w gate=4":                  "crew lead=<USER> gate=4",
		"refund approved by ottilie_m1234 at noon":     "refund approved by <USER> at noon",
		`{"approvedBy":"mirela.p","sorted_by":"name"}`: `{"approvedBy":"<USER>","sorted_by":"name"}`,
		"ticket_assignee: rosalind.q":                  "ticket_assignee: <USER>",
		"[Show] StageOwner=ignatius_fenwick":           "[Show] StageOwner=<USER>",
	})
	expectKept(t,
		"order by created_at, group by user_id, cast to pthread_t",
		"call sd_notify for is_eval, rename to redis.py and yaml.v3",
		`"CreatedBy": "/bin/sh -c apk add curl"`,
		"sorted_by=size caused_by=timeout",
	)
}

// An e-mail address in a URL's path or query is one; an account before a
// URL's host is the URL pass's; an image's scale suffix is no domain.
func TestEmailInAURLsPath(t *testing.T) {
	expectRedacted(t, map[string]string{
		"otpauth://totp/Acme:wren.odell@example.org?issuer=Acme":            "otpauth://totp/Acme:<EMAIL>?issuer=Acme",
		"GET https://crm.example.com/contacts/wren.odell@example.org/notes": "GET https://crm.example.com/contacts/<EMAIL>/notes",
	})
	expectKept(t,
		"![icon](https://cdn.example.com/img/icon@2x.png) and logo@3x.webp",
		"go get golang.org/x/tools@v0.1.0 and https://cdn.example.net/npm/lodash@4.17.21/lodash.min.js",
	)
}

// A number of sixteen digits or more is an id, unless it is negative or
// reads as a clock, a quantity or an integer type's limit.
func TestLongNumbersAreIDs(t *testing.T) {
	expectRedacted(t, map[string]string{
		"store credit 6620914437719038 applied":   "store credit <ID> applied",
		"ticket seq 308811372950016243 reprinted": "ticket seq <ID> reprinted",
	})
	expectKept(t,
		"at 1733500000000000000 ns, 1733500000000000 us and FILETIME 133780000000000000",
		"usage 20091722000000000 and limit 9223372036854775807, max 9007199254740991",
		"offset -4411937226618830 and 9999999999999999",
	)
}

// A Windows program's slash flag named for a secret takes its value.
func TestSlashFlagsOfWindowsCommands(t *testing.T) {
	expectRedacted(t, map[string]string{
		`poolctl.exe /host gw.example.net /admin-password tern77 /verbose`: `poolctl.exe /host gw.example.net /admin-password <SECRET> /verbose`,
		`sync.cmd /token kiln44river /q`:                                   `sync.cmd /token <SECRET> /q`,
	})
	expectKept(t,
		"POST /password reset",
		"cd /secret foo",
		`poolctl.exe /password-file C:\keys\pool.txt /q`,
		"note /password tern77 then run poolctl.exe /q",
	)
}

// A lock's combination and an unlock word are secrets in a key; a
// keyboard's combination is none.
func TestCombinationsAndWordsInKeys(t *testing.T) {
	expectRedacted(t, map[string]string{
		`vault.door.combination: "14-38-02"`:    `vault.door.combination: "<SECRET>"`,
		"gate_unlock_word=heron lantern quarry": "gate_unlock_word=<SECRET>",
		`{"padlock_combo":"7-19-33","n":2}`:     `{"padlock_combo":"<SECRET>","n":2}`,
	})
	expectKept(t,
		"key_combination: ctrl+alt+del",
		"color_combination=red word_count=12",
	)
}

// A password right after its word ends the clause; a wireless network
// named announces its passphrase.
func TestPasswordEndingTheClause(t *testing.T) {
	expectRedacted(t, map[string]string{
		"lobby kiosk password fern8":                 "lobby kiosk password <SECRET>",
		"arena password fern8, then start":           "arena password <SECRET>, then start",
		"shop wifi for guests: walnut ember sparrow": "shop wifi for guests: <SECRET>",
		"guest wifi is Larch-Otter-77":               "guest wifi is <SECRET>",
	})
	expectKept(t,
		"password v2",
		"wifi: enabled; wifi: connected to home network; wifi signal strength is -71 dBm",
		`ALTER ROLE app PASSWORD NULL`,
	)
}

// A quoted pass phrase after a key for a generated value is one; words,
// a separator and a year of a person's life are a password; an account
// and its password may be written as one word after login.
func TestPhrasesYearsAndPairs(t *testing.T) {
	expectRedacted(t, map[string]string{
		`ap join ssid="Barn" key="otter lantern quarry thistle" rssi=-60`: `ap join ssid="Barn" key="<SECRET>" rssi=-60`,
		"ipa-client-install -w willow.parsnip.1979 -U":                    "ipa-client-install -w <SECRET> -U",
		"console login admin/heron-walnut-copper7":                        "console login admin/<SECRET>",
	})
	expectKept(t,
		`key="primary key of the table"`,
		"RequestModel = string alias keeps arbitrary caller strings",
		"backup.daily.2024 and release-notes-2023 written",
		"login page/index2 shown; account usr/local2",
	)
}

// Values that say where a secret is, what state a feature is in or what a
// visitor prefers are none; mysql's -p before a word prompts for one.
func TestReferencesStatesAndPreferences(t *testing.T) {
	expectKept(t,
		"APP__MAIL__SECRET=vault:kv/data/app/mail#secret",
		"db_password=file:/run/secrets/db",
		"secret_scanning: enabled; push_protection: disabled",
		"Authorization: Basic [REDACTED]",
		"Cookie: site_lang=pt-BR; consent=analytics:false,ads:true",
		"mysql -u ops -p ledgerdb (prompting for password)",
	)
	expectRedacted(t, map[string]string{
		"login: user=kdoyle8 pass=x":                         "login: user=<USER> pass=<SECRET>",
		"Cookie: site_lang=pt-BR; sid=Xk29dkQpz8Lm2vA0cN7rT": "Cookie: site_lang=pt-BR; sid=<SECRET>",
	})
}

// Codes, phrases and accounts where people write them.
func TestCodesPhrasesAndAccountsOfStaff(t *testing.T) {
	expectRedacted(t, map[string]string{
		"arcade: operator menu code 4417":                 "arcade: operator menu code <SECRET>",
		`note "gate code for delivery 5521"`:              `note "gate code for delivery <SECRET>"`,
		"kiosk PIN accepted (9023) for shift A":           "kiosk PIN accepted (<SECRET>) for shift A",
		"stockroom door keypad 481150":                    "stockroom door keypad <SECRET>",
		"hmi login operator/40917 ok":                     "hmi login operator/<SECRET> ok",
		"studio admin password lantern-quarry-thistle":    "studio admin password <SECRET>",
		"vault cert passphrase heron walnut ember quarry": "vault cert passphrase <SECRET>",
		"club wallet seed pilot hurry mango ridge fossil timber oyster clerk velvet absorb grape lunar canyon ember crater vivid humble nephew salad quiz thrive deputy mule orbit": "club wallet seed <SECRET>",
		"marshal tovanek logged in from the north gate":           "marshal <USER> logged in from the north gate",
		"manager oluwadamilare reset password to Pebble!Quartz74": "manager <USER> reset password to <SECRET>",
	})
	expectKept(t,
		"exit code 1234, the code 1001, with code 2002, tracking code 4471",
		"Voicemail PIN for 1003 changed",
		"password reset link sent; password reset email delivered.",
		"the admin user logged in; the manager then logged in; user root logged in",
		"guest master password rotation is due",
		"insert_into_stream_key mystream{t}",
	)
}
