package redact

import "testing"

// A call or a parenthesised clause named by a credential takes its value
// as its argument: the one argument of a clause named by a password word,
// the last (quoted) of two after a verb of logging in; a setting of the
// credential, a variable and a reference stay.
func TestCredentialClauses(t *testing.T) {
	for in, want := range map[string]string{
		"MODUSR ZQUINN PASSWORD(TOLV82) RESUME":                      "MODUSR ZQUINN PASSWORD(<SECRET>) RESUME",
		"SETPRF OPER2 PHRASE('Walnut-Orbit71') NOINTERVAL":           "SETPRF OPER2 PHRASE('<SECRET>') NOINTERVAL",
		"mkuser(nora) password('mint4') quota(5)":                    "mkuser(nora) password('<SECRET>') quota(5)",
		"ALTER LOGIN x WITH PASSWORD('Rq!7vv.Lomb')":                 "ALTER LOGIN x WITH PASSWORD('<SECRET>')",
		"db.users.passwd('ops', 'Fennel_Quartz_38')":                 "db.users.passwd('ops', '<SECRET>')",
		"[auth(basic(relay, 'Plum#Tide44'))]":                        "[auth(basic(relay, '<SECRET>'))]",
		`(http:get url :basic-authorization '("feed" "Orca_lime9"))`: `(http:get url :basic-authorization '("feed" "<SECRET>"))`,
		`(db:open :password "Umber-Sage4")`:                          `(db:open :password "<SECRET>")`,
		`(smtp:send :auth '(:login "robot" "Quill!22"))`:             `(smtp:send :auth '(:login "robot" "<SECRET>"))`,
		// No values.
		"password_min_length(12) password_history(5)":                 "password_min_length(12) password_history(5)",
		"PASSWORD($(DB_PASS)) PASSWORD(${DB_PASS}) PASSWORD(*NONE)":   "PASSWORD($(DB_PASS)) PASSWORD(${DB_PASS}) PASSWORD(*NONE)",
		"user.set_password(newPassword); check_password(raw, hashed)": "user.set_password(newPassword); check_password(raw, hashed)",
		"login(user, pass) basic(realm) PASSWORD(&PWD) password()":    "login(user, pass) basic(realm) PASSWORD(&PWD) password()",
	} {
		if got := String(in); got != want {
			t.Errorf("%q:\n got  %q\n want %q", in, got, want)
		}
	}
}

// A quoted key that names a credential, or one in a subscript, is a pair
// with the quoted value after it, with no sign between or a type's name
// and an arrow: the configuration syntaxes of map files, Tcl and policy
// languages. A key that names none, and a value that is a file, stay.
func TestQuotedKeyAndValue(t *testing.T) {
	for in, want := range map[string]string{
		`  "tile_cache_password" "Gobi71&kelp"`:                            `  "tile_cache_password" "<SECRET>"`,
		`set ::env(LEDGER_PASS) "Hollow%Tern52"`:                           `set ::env(LEDGER_PASS) "<SECRET>"`,
		`array set conf(db_password) {x} ; set opts(api_token) 'Zr8sPq'`:   `array set conf(db_password) {x} ; set opts(api_token) '<SECRET>'`,
		`"backup_password" string => "Wick+oak+63", comment => "nightly";`: `"backup_password" string => "<SECRET>", comment => "nightly";`,
		// No values.
		`"tile_cache_dir" "/var/cache/tiles" "wms_title" "Rivers"`:    `"tile_cache_dir" "/var/cache/tiles" "wms_title" "Rivers"`,
		`grep -n "password" "settings.ini"; {"password":"", "x":"y"}`: `grep -n "password" "settings.ini"; {"password":"", "x":"y"}`,
		`"mail_password" string => "$(vars.relay_pw)";`:               `"mail_password" string => "$(vars.relay_pw)";`,
	} {
		if got := String(in); got != want {
			t.Errorf("%q:\n got  %q\n want %q", in, got, want)
		}
	}
}
