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
