package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/ui"
)

// A client without a valid credential (no token, a wrong token, a cookie
// of no session, a signed-out session's cookie) learns nothing of the
// store: each page and action naming a run and call that exist gets the
// answer of one naming a run nobody began, byte for byte, and nothing of
// the run reaches it.
func TestNoCredentialLearnsWhatExists(t *testing.T) {
	const tok = "0123456789abcdef-operator"
	h := ui.Handler(seeded(t, "r1"), ui.Options{BearerTokens: []string{tok}, AllowActions: true})
	_, _, hdr := get(h, "POST", "/login", url.Values{"token": {tok}})
	signedOut := strings.SplitN(hdr.Get("Set-Cookie"), ";", 2)[0]
	page, body, _ := get(h, "GET", "/", nil, "Cookie", signedOut)
	csrf := between(body, `name="csrf" value="`, `"`)
	if page != http.StatusOK || csrf == "" {
		t.Fatalf("the signed-in page: %d, CSRF token %q", page, csrf)
	}
	if code, _, _ := get(h, "POST", "/logout", url.Values{"csrf": {csrf}}, "Cookie", signedOut); code >= 400 {
		t.Fatalf("sign-out: %d", code)
	}
	creds := map[string][]string{
		"none":                nil,
		"a wrong token":       {"Authorization", "Bearer wrong"},
		"a cookie of nothing": {"Cookie", strings.SplitN(signedOut, "=", 2)[0] + "=0000"},
		"a signed-out cookie": {"Cookie", signedOut},
	}
	type req struct {
		method, target string
		form           url.Values
	}
	of := func(run, call string) []req {
		return []req{
			{"GET", "/run?run=" + run, nil},
			{"GET", "/call?run=" + run + "&call=" + call, nil},
			{"GET", "/confirm?do=abandon&run=" + run + "&call=" + call, nil},
			{"POST", "/act", url.Values{"do": {"close"}, "run": {run}, "principal": {"agent"}, "csrf": {csrf}, "confirm": {"close"}}},
			{"POST", "/act", url.Values{"do": {"abandon"}, "run": {run}, "call": {call}, "csrf": {csrf}, "confirm": {"abandon"}}},
		}
	}
	there, absent := of("r1", "call_kb_1"), of("r-nobody", "call_nobody")
	for name, c := range creds {
		for i := range there {
			code, body, _ := get(h, there[i].method, there[i].target, there[i].form, c...)
			noneCode, noneBody, _ := get(h, absent[i].method, absent[i].target, absent[i].form, c...)
			if code != noneCode || body != noneBody || code < 300 {
				t.Errorf("%s, %s %s: %d %q; of nothing: %d %q", name, there[i].method, there[i].target, code, body, noneCode, noneBody)
			}
			if strings.Contains(body, "call_kb_1") {
				t.Errorf("%s, %s %s: the answer names the call", name, there[i].method, there[i].target)
			}
		}
	}
	if code, _, _ := get(h, "GET", "/run?run=r1", nil, "Authorization", "Bearer "+tok); code != http.StatusOK {
		t.Fatalf("the run after the refused actions: %d", code)
	}
}

// between returns what s holds between the first from and the next to.
func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}
