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
