package ui

import (
	"crypto/subtle"
	"net/http"
	"net/url"

	"github.com/toolcanon/toolcanon/canonical"
)

// maxActionForm bounds an action's form.
const maxActionForm = 8 << 10

// maxReap bounds the passed leases one reap of a run abandons.
const maxReap = 1000

// action is what an operator asks for.
type action struct {
	Do        string // "abandon", "reap" or "close"
	RunID     string
	CallID    string // abandon only
	Principal string // close only: the run's principal, whom the store checks
}

// parseAction reads an action from a confirmation query or a form.
func parseAction(v url.Values, form bool) (action, error) {
	a := action{Do: v.Get("do"), RunID: v.Get("run"), CallID: v.Get("call"), Principal: v.Get("principal")}
	for k, vs := range v {
		if len(vs) != 1 {
			return a, canonical.Errorf(CodeBadRequest, "parameter %q is given %d times", k, len(vs))
		}
		switch k {
		case "do", "run", "call":
		case "principal", "csrf", "confirm":
			if !form {
				return a, canonical.Errorf(CodeBadRequest, "unexpected parameter %q", k)
			}
		default:
			return a, canonical.Errorf(CodeBadRequest, "unexpected parameter %q", k)
		}
	}
	if canonical.ValidateRunID(a.RunID) != nil {
		return a, canonical.Errorf(CodeBadRequest, "run must be 1-%d bytes of [A-Za-z0-9_.-]", canonical.MaxIDLen)
	}
	switch a.Do {
	case "abandon":
		if canonical.ValidateToolCallID(a.CallID) != nil {
			return a, canonical.Errorf(CodeBadRequest, "call must be 1-%d bytes of [A-Za-z0-9_.-]", canonical.MaxIDLen)
		}
	case "reap", "close":
		if a.CallID != "" {
			return a, canonical.Errorf(CodeBadRequest, "%s takes no call", a.Do)
		}
	default:
		return a, canonical.Errorf(CodeBadRequest, "do must be abandon, reap or close")
	}
	if a.Do != "close" && a.Principal != "" {
		return a, canonical.Errorf(CodeBadRequest, "only close takes a principal")
	}
	if err := canonical.ValidatePrincipal(a.Principal); err != nil {
		return a, canonical.Errorf(CodeBadRequest, "principal must be at most %d bytes of UTF-8", canonical.MaxPrincipalLen)
	}
	return a, nil
}

// confirmPage is the confirmation step of an action.
func (s *server) confirmPage(w http.ResponseWriter, r *http.Request) {
	if !s.opts.AllowActions {
		s.fail(w, r, http.StatusForbidden, canonical.Errorf(CodeActionsOff, "actions are off: start the UI with --allow-actions"))
		return
	}
	a, err := parseAction(r.URL.Query(), false)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	s.render(w, r, http.StatusOK, "confirm", page{Title: "Confirm " + a.Do, Data: a})
}

// actionDone is the page after an action.
type actionDone struct {
	action
	Abandoned []string // calls closed
	Message   string
}

// act runs a confirmed action through the store, after the CSRF token, the
// confirmation and the request's origin are checked, and logs it.
func (s *server) act(w http.ResponseWriter, r *http.Request) {
	if !s.opts.AllowActions {
		s.fail(w, r, http.StatusForbidden, canonical.Errorf(CodeActionsOff, "actions are off: start the UI with --allow-actions"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxActionForm)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, canonical.Errorf(CodeBadRequest, "unreadable form"))
		return
	}
	if !s.sameOrigin(r) || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		s.opts.Log.Warn("ui: action refused", "code", CodeCSRF, "remote", r.RemoteAddr)
		s.fail(w, r, http.StatusForbidden, canonical.Errorf(CodeCSRF, "the action did not come from this UI's confirmation page"))
		return
	}
	a, err := parseAction(r.PostForm, true)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if r.PostForm.Get("confirm") != a.Do {
		s.fail(w, r, http.StatusBadRequest, canonical.Errorf(CodeUnconfirmed, "the action was not confirmed"))
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	done := actionDone{action: a}
	switch a.Do {
	case "abandon":
		if _, err = s.store.Abandon(ctx, a.RunID, a.CallID); err == nil {
			done.Abandoned = []string{a.CallID}
		}
	case "reap":
		var ids []string
		if ids, err = s.store.ExpiredLeases(ctx, a.RunID, maxReap); err == nil {
			for _, id := range ids {
				_, e := s.store.Abandon(ctx, a.RunID, id)
				switch canonical.CodeOf(e) {
				case "":
					done.Abandoned = append(done.Abandoned, id)
				case canonical.CodeInvalidTransition, canonical.CodeNotFound:
					// completed, or closed by a reaper, since the read
				default:
					err = e
				}
			}
		}
	case "close":
		err = s.store.CloseRun(ctx, a.RunID, a.Principal)
	}
	log := []any{"action", a.Do, "run_id", a.RunID, "remote", r.RemoteAddr, "abandoned", len(done.Abandoned)}
	if a.CallID != "" {
		log = append(log, "tool_call_id", a.CallID)
	}
	if err != nil {
		s.opts.Log.Warn("ui: action failed", append(log, "code", canonical.CodeOf(err))...)
		s.fail(w, r, storeStatus(err), err)
		return
	}
	s.opts.Log.Info("ui: action", log...)
	s.render(w, r, http.StatusOK, "done", page{Title: "Done", Data: done})
}

// sameOrigin refuses a request a browser marks as sent from another site,
// or whose Origin is another host. Under the pages' no-referrer policy a
// browser sends "Origin: null" with a form of the UI itself.
func (s *server) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}
