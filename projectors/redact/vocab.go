package redact

import (
	"maps"
	"slices"
	"strings"
)

// Vocabulary returns every literal the redactor keys on, by rule: the keys,
// key stems and authorization schemes of assignments, vendor token
// prefixes, URL schemes, host-name labels, phrase and stack-trace markers,
// separators. It is for building hostile inputs: each literal, repeated,
// must cost linear time (see the package's adversarial tests).
func Vocabulary() map[string][]string {
	v := map[string][]string{
		"credential-words": slices.Sorted(maps.Keys(credentialWords)),
		"setting-words":    slices.Sorted(maps.Keys(settingWords)),
		"interface-words":  slices.Sorted(maps.Keys(interfaceWords)),
		"qualified-nouns":  qualifiedVocabulary(),
		"keys":             slices.Sorted(maps.Keys(exactKeys)),
		"auth-schemes":     authSchemes,
		"host-labels":      append(slices.Sorted(maps.Keys(hostTLDs)), slices.Sorted(maps.Keys(codeRoots))...),
		"home-prefixes":    homePrefixes,
		"separators": {"=", ":", "=>", ": ", " = ", `":"`, `\":\"`, "&", ";", ",", "|", "'", `"`, "`", "\\", "/", "@", "%",
			"+", "-", ".", "_", "[", "]", "(", ")", "{", "}", "<", ">", "#", "?", "!", "*", "~", "\t", "\n", "\r"},
		"markers": {"://", "--", "-----BEGIN ", "-----END ", "-----", "arn:", "arn:aws:iam::", "eyJ", "Bearer ", "Basic ",
			"user ", "password for ", "publickey for ", "for invalid user ", "pid ", "ip-", "sshd[", "[1]:", "goroutine 1 [",
			"Traceback (most recent call last)", "\tat ", "\n\tat ", `\n\tat `, "\n  File \"", "at a.B(C.java:1)", "(Native Method)",
			"select ", " from ", "insert into", "update ", " set ", "delete from", " where ", " in (", " like ", "where+",
			"containerd://", "docker://", "user:pass@", "<SECRET>", "<IP>", "4111 1111 1111 1111 ", "4111-", "0a:", "fe80::",
			"10.0.0.1", "[::1]:"},
	}
	v["webhook-markers"] = append(append(slices.Clone(webhookMarkers), slackMarkers...), "with/key/", "/bot123:", "hooks.slack.com/services/")
	v["flags"] = append(slices.Clone(credentialCommands), "-p", "-u", "-U", "-a", "-pX1!", "-uroot", "--user", "--password", "--tenant",
		"-storepass", "--proxy-user", "--password <<< ", "$6$", "$2b$12$", "$a$b$", "{PLAIN}", "{SSHA}x", "{A-", "smtp auth ", "curl -u a:b", "mysql -p", "redis-cli -a", "sudo:", "(to root) ", " : TTY=", "@", "root@db01", "a:b@h::m")
	for _, c := range slices.Sorted(maps.Keys(accountVerbs)) {
		v["flags"] = append(v["flags"], c+" ", c+" user -b ", c+" a b c ")
	}
	v["nodes"] = []string{"gke-a-b-0123abcd-x1y2", "aks-pool-12345678-vmss00000a", "aks-pool-12345678-3", "i-0123456789abcdef0",
		"ip-10-0-0-1", "db01:5432", "vault-03:"}
	var ph []string
	for _, p := range phrases {
		ph = append(ph, p.lit)
	}
	v["phrases"] = append(ph, slices.Sorted(maps.Keys(determiners))...)
	v["english-words"] = slices.Sorted(maps.Keys(englishWords))
	var stack []string
	for _, m := range stackMarkers {
		stack = append(stack, string(m))
	}
	v["stack-markers"] = stack
	var vendors []string
	for _, p := range vendorPrefixes {
		vendors = append(vendors, p.p)
	}
	v["vendor-prefixes"] = vendors
	var refs []string
	for _, o := range refOpeners {
		refs = append(refs, o.open, o.close, o.open+"x"+o.close)
	}
	v["references"] = append(append(refs, refCalls...), "$X", "$PASSWORD", "<password>", "%(password)s")
	proofs := []string{"AAAAB3NzaC1", "AAAAC3NzaC1lZDI1NTE5", "00-", "0x", "sha256/", "sha256//", "gpg: ", "-----BEGIN PGP SIGNATURE-----",
		"-----BEGIN PGP PUBLIC KEY BLOCK-----", "commit 0123456789abcdef0123456789abcdef01234567 into "}
	for _, p := range proofsTable {
		proofs = append(proofs, p.words...)
	}
	v["proofs"] = proofs
	var pem []string
	for _, l := range publicPEMLabels {
		pem = append(pem, "-----BEGIN "+l+"-----", "-----END "+l+"-----")
	}
	v["pem-labels"] = pem
	v["positions"] = append(append(slices.Clone(cloudPathWords), specialWords...),
		"process ", "Killed process 1", "identified by ", "IDENTIFIED BY '", "password for ", "= '", "machine ", "default login ",
		"login ", "password ", "account ", "subscription ", "tenant ", "project ", "directory ", "requirepass ", "<password>",
		"</password>", "a/b@c", "a/\"b\"@c", "h:5432:d:u:", "*:*:*:u:", "a:b@tcp(", "-e ", "subscriptions/", "1234 of ")
	var announced []string
	for _, w := range slices.Sorted(maps.Keys(announcedWords)) {
		announced = append(announced, w+" is ", "verification "+w+" ", w+": ", w+" for 1 was ")
	}
	for _, w := range slices.Sorted(maps.Keys(accountWords)) {
		announced = append(announced, w+" a / b1234 ", w+": ")
	}
	for _, l := range slices.Sorted(maps.Keys(loginVerbs)) {
		announced = append(announced, l+" as ", l+" to a as ")
	}
	v["announced"] = append(append(announced, slices.Sorted(maps.Keys(connectors))...), "ConvertTo-SecureString '", " -String \"",
		"echo ", "echo x | ", "echo 'x' | chpasswd ", "| kinit ", "<<< ", "<<< 'x' ", "--password-stdin ", "password_stdin <<< ",
		"password => ", "password -> ", "codes: a1b2-c3d4 ", "password from ",
		// A value after "pass" by an account, a phrase after a password's
		// noun, a code an opening names, a former value of a secret, the
		// name an address spells.
		"login a.b pass ", "admin pass x ", "password abc def ghi ", "password is a-b-c-1 ", "password, it is ", "code #1234 ", "code (1234) ", "padlock 123 ", "psk=a b c ", "logged in on a b with Ab-12-cd ", "wifi \"a b\" key ", "phrase \"a b c\" ", "manager override 1234 ", "<a b c> ", "opens with 1-2-3-4 ", " (was 1234)", "from 1234 to ", " old=a1 new=", "Jane Doe, jane.doe@x.io ")
	v["phones"] = append(append(slices.Sorted(maps.Keys(phoneWords)), slices.Sorted(maps.Keys(callWords))...), "+1 (415) 555-", "07700 900512: ", "+44 20 ", "+254", "+1-", "(1) ", "phone_number",
		"07700 ", "0 ", "phone 555-", "tel: 0")
	for _, n := range slices.Sorted(maps.Keys(servedNouns)) {
		v["persons"] = append(v["persons"], n+" ", n+" Ab ", n+"=Ab Cd")
	}
	for _, t := range slices.Sorted(maps.Keys(titles)) {
		v["persons"] = append(v["persons"], strings.ToUpper(t[:1])+t[1:]+" Ab ", strings.ToUpper(t[:1])+t[1:]+". Ab Cd ")
	}
	v["persons"] = append(v["persons"], "Anna Berg ", ";Anna ", "Anna Ab-Cd ", "Anna O'Ab ", "by anna.ab ", "by ab.abcd12 ", "by anna_ab ")
	for _, w := range slices.Sorted(maps.Keys(streetTypes)) {
		v["persons"] = append(v["persons"], "1 Ab "+strings.ToUpper(w[:1])+w[1:]+" ", "12B Ab Cd "+strings.ToUpper(w[:1])+w[1:]+". ")
	}
	for _, w := range slices.Sorted(maps.Keys(birthWords)) {
		v["persons"] = append(v["persons"], w+" 1938-04-02 ", w+": 02/04/1938", w+"=2.4.1938")
	}
	for _, w := range slices.Sorted(maps.Keys(outcomeWords)) {
		v["announced"] = append(v["announced"], w+" with code 1234 ", w+": code 1234")
	}
	v["announced"] = append(v["announced"], "code 1234 ", "with code 1234 ", "pins 1234 / 5678 ", "codes 1234 and 5678 ",
		"password 1234 ", "a/b/requirepass 'x' ")
	for k, words := range v {
		v[k] = slices.Clone(words) // the caller may change them
	}
	return v
}

// qualifiedVocabulary lists each qualified noun after each qualifier.
func qualifiedVocabulary() []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(qualifiedNouns)) {
		for _, q := range slices.Sorted(maps.Keys(qualifiedNouns[n])) {
			out = append(out, q+"_"+n)
		}
	}
	return out
}
