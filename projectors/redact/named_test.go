package redact

import "testing"

// A call or a parenthesised clause named by a credential takes its value
// as its argument: the one argument of a clause named by a password word,
// the last (quoted) of two after a verb of logging in; a setting of the
// credential, a variable and a reference stay.
func TestCredentialClauses(t *testing.T) {
	expectRedacted(t, map[string]string{
		"MODUSR ZQUINN PASSWORD(TOLV82) RESUME":               "MODUSR ZQUINN PASSWORD(<SECRET>) RESUME",
		"SETPRF OPER2 PHRASE('Walnut-Orbit71') NOINTERVAL":    "SETPRF OPER2 PHRASE('<SECRET>') NOINTERVAL",
		"mkuser(nora) password('mint4') quota(5)":             "mkuser(nora) password('<SECRET>') quota(5)",
		"ALTER LOGIN x WITH PASSWORD('Rq!7vv.Lomb')":          "ALTER LOGIN x WITH PASSWORD('<SECRET>')",
		"db.users.passwd('ops', 'Fennel_Quartz_38')":          "db.users.passwd('ops', '<SECRET>')",
		"[auth(basic(relay, 'Plum#Tide44'))]":                 "[auth(basic(relay, '<SECRET>'))]",
		`(feeds:pull url :proxy-auth '("feed" "Orca_lime9"))`: `(feeds:pull url :proxy-auth '("feed" "<SECRET>"))`,
		`(db:open :password "Umber-Sage4")`:                   `(db:open :password "<SECRET>")`,
		`(mailer:deliver :auth '(:login "robot" "Quill!22"))`: `(mailer:deliver :auth '(:login "robot" "<SECRET>"))`,
		// No values.
		"password_min_length(12) password_history(5)":                 "password_min_length(12) password_history(5)",
		"PASSWORD($(DB_PASS)) PASSWORD(${DB_PASS}) PASSWORD(*NONE)":   "PASSWORD($(DB_PASS)) PASSWORD(${DB_PASS}) PASSWORD(*NONE)",
		"user.set_password(newPassword); check_password(raw, hashed)": "user.set_password(newPassword); check_password(raw, hashed)",
		"login(user, pass) basic(realm) PASSWORD(&PWD) password()":    "login(user, pass) basic(realm) PASSWORD(&PWD) password()",
	})
}

// A quoted key that names a credential, or one in a subscript, is a pair
// with the quoted value after it, with no sign between or a type's name
// and an arrow: the configuration syntaxes of map files, Tcl and policy
// languages. A key that names none, and a value that is a file, stay.
func TestQuotedKeyAndValue(t *testing.T) {
	expectRedacted(t, map[string]string{
		`  "tile_cache_password" "Gobi71&kelp"`:                            `  "tile_cache_password" "<SECRET>"`,
		`set ::env(LEDGER_PASS) "Hollow%Tern52"`:                           `set ::env(LEDGER_PASS) "<SECRET>"`,
		`array set conf(db_password) {x} ; set opts(api_token) 'Zr8sPq'`:   `array set conf(db_password) {x} ; set opts(api_token) '<SECRET>'`,
		`"backup_password" string => "Wick+oak+63", comment => "nightly";`: `"backup_password" string => "<SECRET>", comment => "nightly";`,
		// No values.
		`"tile_cache_dir" "/var/cache/tiles" "wms_title" "Rivers"`:    `"tile_cache_dir" "/var/cache/tiles" "wms_title" "Rivers"`,
		`"db_password" "-" "api_token" "*"`:                           `"db_password" "-" "api_token" "*"`,
		`grep -n "password" "settings.ini"; {"password":"", "x":"y"}`: `grep -n "password" "settings.ini"; {"password":"", "x":"y"}`,
		`"mail_password" string => "$(vars.relay_pw)";`:               `"mail_password" string => "$(vars.relay_pw)";`,
	})
}

// A credential noun announces the next value after a few joining words
// of a closed list (reset to, attempted, is now, lautet), after a leader
// of dots, or, for an answer to a question, right after it; a code may be
// a noun glued before "code" (Torcode) or a combination. Prose after the
// noun (a reset link, attempts exceeded) keeps its words.
func TestJoiningWords(t *testing.T) {
	expectRedacted(t, map[string]string{
		"member login failed, password attempted '27/03/91'":              "member login failed, password attempted '<SECRET>'",
		"kiosk password is now Brisk-Otter61":                             "kiosk password is now <SECRET>",
		"vault combination 604917 logged; gym combo to 3318":              "vault combination <SECRET> logged; gym combo to <SECRET>",
		"Hallo, der Torcode lautet 55190327 ab Montag":                    "Hallo, der Torcode lautet <SECRET> ab Montag",
		"caller verification: security answer Lindenallee":                "caller verification: security answer <SECRET>",
		`profile: security question "first school" answer "Saint Albans"`: `profile: security question "first school" answer "<SECRET>"`,
		"  Password  . . . . . . . . . :   QUAY58":                        "  Password  . . . . . . . . . :   <SECRET>",
		// Prose.
		"password reset link sent to the member; PIN attempts exceeded":     "password reset link sent to the member; PIN attempts exceeded",
		"security answer updated, answer the question, barcode is 40012345": "security answer updated, answer the question, barcode is 40012345",
		"password attempted twice, combination of factors, combo box":       "password attempted twice, combination of factors, combo box",
	})
}

// An element named by a credential holds it as its text though its name
// has a namespace's prefix and its tag attributes.
func TestElementNamedWithAttributes(t *testing.T) {
	expectRedacted(t, map[string]string{
		`<sec:Password Type="#Text">Harbor^Kite5</sec:Password>`: `<sec:Password Type="#Text"><SECRET></sec:Password>`,
		// No values.
		`<sec:Nonce EncodingType="#B64"/> <x:User Type="plain">ops</x:User>`:                                    `<sec:Nonce EncodingType="#B64"/> <x:User Type="plain">ops</x:User>`,
		`<x:PasswordPolicy Mode="strict">on</x:PasswordPolicy> <sec:Password Type="#Text">${PW}</sec:Password>`: `<x:PasswordPolicy Mode="strict">on</x:PasswordPolicy> <sec:Password Type="#Text">${PW}</sec:Password>`,
	})
}

// An element whose short name attribute (n=) names a credential holds it
// in its short value attribute (v=), as the long ones (name=, value=) do.
func TestShortNameValueAttributes(t *testing.T) {
	expectRedacted(t, map[string]string{
		`<prop n="password" t="s:Str" v="marigold1977"/>`: `<prop n="password" t="s:Str" v="<SECRET>"/>`,
		// No values.
		`<prop n="timeout" t="s:Int" v="30"/> <q n="3" v="x"/>`: `<prop n="timeout" t="s:Int" v="30"/> <q n="3" v="x"/>`,
	})
}

// A key's path named by its last segment pairs with the quoted value after
// it, as a quoted key does: the configuration commands of stores of
// settings. A path that ends elsewhere, or a file after it, stays.
func TestKeyPathAndQuotedValue(t *testing.T) {
	expectRedacted(t, map[string]string{
		"shopctl conf:put payment/acme/password 'Velvet~Gull8'": "shopctl conf:put payment/acme/password '<SECRET>'",
		`kvstore put /apps/ledger/db_password "Cobalt.Fern44"`:  `kvstore put /apps/ledger/db_password "<SECRET>"`,
		// No values.
		"shopctl conf:put payment/acme/timeout '30' ; cp /srv/app/password '/backup/'": "shopctl conf:put payment/acme/timeout '30' ; cp /srv/app/password '/backup/'",
	})
}

// A setting that runs a command to yield a password holds the password
// itself when the command echoes it; a reference echoed, or an echo that
// no such setting runs, stays.
func TestPasswordEchoedBySetting(t *testing.T) {
	expectRedacted(t, map[string]string{
		"secret-command: echo Sorrel.Jay71":  "secret-command: echo <SECRET>",
		`  PassCmd "echo 'mango lintel 90'"`: `  PassCmd "echo '<SECRET>'"`,
		`pwdeval = "echo Quokka^3"`:          `pwdeval = "echo <SECRET>"`,
		// No values.
		`PassCmd "echo $IMAP_PW" ; echo done`:      `PassCmd "echo $IMAP_PW" ; echo done`,
		"build-command: echo Building8 ; password": "build-command: echo Building8 ; password",
	})
}

// A remote procedure call whose method logs in takes an account and its
// password as its two params; another method's params stay.
func TestRemoteLoginParams(t *testing.T) {
	expectRedacted(t, map[string]string{
		`{"jsonrpc":"2.0","method":"session.login","params":["ops","Tarn#Willow6"],"id":3}`: `{"jsonrpc":"2.0","method":"session.login","params":["ops","<SECRET>"],"id":3}`,
		// No values.
		`{"method": "pool.query", "params": ["tank", "online"]} {"method": "auth.login", "params": ["ops"]}`: `{"method": "pool.query", "params": ["tank", "online"]} {"method": "auth.login", "params": ["ops"]}`,
	})
}

// A short -u or -U carries the account of the password that a short -p or
// -P of the same line carries, whatever the command; without such a
// password, -u is another option.
func TestAccountFlagBesidePasswordFlag(t *testing.T) {
	expectRedacted(t, map[string]string{
		"vaultsync -U jbrennan4 -P q8vtnwz2kd -D LAB https://sync.example/x": "vaultsync -U <USER> -P <SECRET> -D LAB https://sync.example/x",
		// No account.
		"sort -u names.txt; ssh -p 2222 -u deploy; zip -u arch.zip -p ./dir": "sort -u names.txt; ssh -p 2222 -u deploy; zip -u arch.zip -p ./dir",
	})
}

// A Lisp call names itself inside its parenthesis, and takes its
// arguments as any call named by a credential does.
func TestLispCallNamedInside(t *testing.T) {
	expectRedacted(t, map[string]string{
		`(db-connect (login "ledger" "Pavane_91") :port 5432)`: `(db-connect (login "ledger" "<SECRET>") :port 5432)`,
		`(signin "ops" "Tarn2-fell")`:                          `(signin "ops" "<SECRET>")`,
		// No values.
		`(login user pw) (login "ledger") (password expired)`: `(login user pw) (login "ledger") (password expired)`,
	})
}

// A script that waits for a prompt for a password and sends a reply sends
// the password; a reply to another prompt stays.
func TestReplyToPasswordPrompt(t *testing.T) {
	expectRedacted(t, map[string]string{
		`expect "assword:" { send "Brindle44%\r" }`:  `expect "assword:" { send "<SECRET>\r" }`,
		`p.expect('Enter PIN:'); p.sendline('8831')`: `p.expect('Enter PIN:'); p.sendline('<SECRET>')`,
		// No values.
		`expect "login:" { send "ops\r" } ; expect "assword:" { send "$pw\r" }`: `expect "login:" { send "ops\r" } ; expect "assword:" { send "$pw\r" }`,
	})
}

// A colon that ends a quoted string ends a prompt, not a key: the text
// between that string and the next is no value. A key and a quoted value
// after its colon stay a pair.
func TestColonEndingAPrompt(t *testing.T) {
	expectRedacted(t, map[string]string{
		`expect "login:" { send "ops\r" }`:          `expect "login:" { send "ops\r" }`,
		`s.expect('Enter PIN:'); s.next()`:          `s.expect('Enter PIN:'); s.next()`,
		`{User:"wbrandt9" Password:"Tallow+Reef8"}`: `{User:"<USER>" Password:"<SECRET>"}`,
	})
}
