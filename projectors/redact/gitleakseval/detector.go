package gitleakseval

import (
	"bytes"
	"math"
	"strings"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/regexp"
)

// Detector finds the secrets of gitleaks' default rules. It is safe for
// concurrent use.
type Detector struct {
	rules   []rule
	global  []*config.Allowlist
	skipped int // rules without keywords
}

type rule struct {
	keywords   [][]byte // lower case
	re         *regexp.Regexp
	group      int
	entropy    float64
	allowlists []*config.Allowlist
}

// New loads gitleaks' default configuration.
func New() (*Detector, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return nil, err
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, err
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, err
	}
	d := &Detector{global: cfg.Allowlists}
	for _, id := range cfg.OrderedRules {
		r := cfg.Rules[id]
		if r.Regex == nil || len(r.RequiredRules) > 0 {
			continue
		}
		if len(r.Keywords) == 0 {
			d.skipped++
			continue
		}
		nr := rule{re: r.Regex, group: r.SecretGroup, entropy: r.Entropy, allowlists: r.Allowlists}
		for _, k := range r.Keywords {
			nr.keywords = append(nr.keywords, []byte(strings.ToLower(k)))
		}
		d.rules = append(d.rules, nr)
	}
	return d, nil
}

// Rules returns how many rules the detector runs and how many it leaves
// out for want of keywords.
func (d *Detector) Rules() (run, skipped int) { return len(d.rules), d.skipped }

// maxMessage bounds the text one call looks at: the query-log projector
// cuts messages far shorter.
const maxMessage = 64 << 10

// Spans implements redact.Detector.
func (d *Detector) Spans(dst [][2]int, msg []byte) [][2]int {
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	lower := bytes.ToLower(msg)
	for i := range d.rules {
		r := &d.rules[i]
		hit := false
		for _, k := range r.keywords {
			if bytes.Contains(lower, k) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		for _, m := range r.re.FindAllSubmatchIndex(msg, -1) {
			s, e := m[0], m[1]
			switch {
			case r.group > 0 && 2*r.group+1 < len(m) && m[2*r.group] >= 0:
				s, e = m[2*r.group], m[2*r.group+1]
			case r.group == 0:
				// gitleaks' default: the first group that matched, else
				// the whole match.
				for g := 1; 2*g+1 < len(m); g++ {
					if m[2*g] >= 0 {
						s, e = m[2*g], m[2*g+1]
						break
					}
				}
			}
			if e <= s {
				continue
			}
			secret := string(msg[s:e])
			if r.entropy > 0 && shannon(secret) <= r.entropy {
				continue
			}
			if allowed(r.allowlists, secret, string(msg[m[0]:m[1]]), string(msg)) || allowed(d.global, secret, string(msg[m[0]:m[1]]), string(msg)) {
				continue
			}
			dst = append(dst, [2]int{s, e})
		}
	}
	return dst
}

// allowed reports whether an allowlist lets the finding go, as gitleaks
// does for its regexes (on the secret, the match or the line) and stop
// words (on the secret).
func allowed(lists []*config.Allowlist, secret, match, line string) bool {
	for _, a := range lists {
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line
		}
		re := a.RegexAllowed(target)
		stop, _ := a.ContainsStopWord(secret)
		if a.MatchCondition == config.AllowlistMatchAnd {
			if (len(a.Regexes) == 0 || re) && (len(a.StopWords) == 0 || stop) && (len(a.Regexes) > 0 || len(a.StopWords) > 0) {
				return true
			}
		} else if re || stop {
			return true
		}
	}
	return false
}

func shannon(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h := 0.0
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
