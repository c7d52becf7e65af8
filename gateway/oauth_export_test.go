package gateway

import "time"

// SetOAuthClock makes g's access-token checks read the time from now; set
// it before g serves.
func SetOAuthClock(g *Gateway, now func() time.Time) { g.oauth.tokens.now = now }

// SetJWKSMinRefetch sets the least time between two fetches of g's key
// set; set it before g serves.
func SetJWKSMinRefetch(g *Gateway, d time.Duration) { g.oauth.keys.minRefetch = d }
