// Package ui is the operator's web view of a canonical store: the runs, a
// run's calls, budgets, leases and progress counters, and one call's
// request, result and digests, as server-rendered HTML.
//
// It is read-only unless Options.AllowActions, shows no raw response or
// request unless Options.ShowRaw (and then redacted and capped), and never
// shows an owner token. Pages carry a Content-Security-Policy without inline
// script, refuse framing and send no referrer; every asset is embedded. The
// one script refreshes a page in place; every page reads without it.
//
// Handler serves a store in the host's process (a memstore, say);
// `toolcanon ui` serves a Redis store and adds the listener's rules: loopback
// unless bearer tokens or an explicit insecure flag.
//
// With bearer tokens, a browser signs in once: its cookie holds a random
// session id, never the token, that expires (Options.SessionTTL) and that
// "Sign out" ends; it is Secure over TLS or behind Options.TrustedProxies
// that say HTTPS. Every authenticated request counts against its client's
// cap (Options.RequestsPerInterval), a live refresh or not.
//
// Every page reads a bounded amount: the runs list one Browser.ListRuns page
// and, per run found, a Usage, its last completion (a CompletedRange and a
// GetMany of one id) and, with calls in flight, an ExpiredLeases; a
// run one Usage, one InFlight, one CompletedRange and one GetMany of its
// page; a call one GetMany. A store that is no canonical.Browser still serves
// runs and calls by id.
package ui
