package drain

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Wildcard marks a variable position of a template.
const Wildcard = "<*>"

// Config tunes a Miner. The zero value of a field selects its default.
type Config struct {
	// Depth of the prefix tree, counting the root, the token-count layer
	// and the leaf layer, as Drain does: depth 4 routes a message by its
	// first token, depth 5 by its first two. Default 4; at least 3.
	Depth int
	// Similarity is the fraction of non-wildcard template positions a
	// message must share with a cluster to join it. Default 0.5.
	Similarity float64
	// MaxChildren bounds the children of one tree node; once reached, new
	// tokens route to the wildcard child. Default 100.
	MaxChildren int
	// MaxClusters bounds the number of clusters; 0 means unbounded. A
	// message that matches no cluster when the bound is reached is not
	// mined (Add reports false).
	MaxClusters int
	// MaxTokens bounds the tokens of one message; the rest are ignored.
	// 0 means unbounded.
	MaxTokens int
}

// DefaultConfig returns the settings of the Loghub benchmark for HDFS and
// Zookeeper, which suit service logs generally.
func DefaultConfig() Config {
	return Config{Depth: 4, Similarity: 0.5, MaxChildren: 100}
}

// Miner groups messages into templates with a fixed-depth prefix tree, as
// in He et al., "Drain: An Online Log Parsing Approach with Fixed Depth
// Tree" (ICWS 2017). Messages are split on white space; tokens that contain
// a digit route to the wildcard child, so numbers do not fragment the tree.
//
// A Miner is not safe for concurrent use.
type Miner struct {
	cfg      Config
	byLen    map[int]*node
	clusters []cluster
	toks     [][]byte
}

type node struct {
	children map[string]*node
	leaf     []int // cluster ids, in creation order
}

type cluster struct {
	template []string
	size     int
}

// New returns a Miner.
func New(cfg Config) *Miner {
	d := DefaultConfig()
	if cfg.Depth == 0 {
		cfg.Depth = d.Depth
	}
	if cfg.Depth < 3 {
		cfg.Depth = 3
	}
	if cfg.Similarity == 0 {
		cfg.Similarity = d.Similarity
	}
	if cfg.MaxChildren <= 1 {
		cfg.MaxChildren = d.MaxChildren
	}
	return &Miner{cfg: cfg, byLen: make(map[int]*node)}
}

// Reset forgets every cluster and keeps the configuration.
func (m *Miner) Reset() {
	clear(m.byLen)
	m.clusters = m.clusters[:0]
}

// Len returns the number of clusters.
func (m *Miner) Len() int { return len(m.clusters) }

// Add mines one message and returns the id of its cluster (0, 1, … in
// creation order). It reports false when the message matched no cluster
// and MaxClusters is reached.
func (m *Miner) Add(msg []byte) (int, bool) {
	m.toks = Tokenize(m.toks[:0], msg)
	if m.cfg.MaxTokens > 0 && len(m.toks) > m.cfg.MaxTokens {
		m.toks = m.toks[:m.cfg.MaxTokens]
	}
	return m.AddTokens(m.toks)
}

// AddString is Add for a string.
func (m *Miner) AddString(msg string) (int, bool) { return m.Add([]byte(msg)) }

// Tokenize appends the white-space separated tokens of msg to dst, as
// sub-slices of msg.
func Tokenize(dst [][]byte, msg []byte) [][]byte {
	start := -1
	for i := 0; i < len(msg); {
		c := msg[i]
		size := 1
		space := false
		if c < utf8.RuneSelf {
			space = c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)
		} else {
			var r rune
			r, size = utf8.DecodeRune(msg[i:])
			space = unicode.IsSpace(r)
		}
		if space {
			if start >= 0 {
				dst = append(dst, msg[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
		i += size
	}
	if start >= 0 {
		dst = append(dst, msg[start:])
	}
	return dst
}

// AddTokens mines one tokenized message. See Add.
func (m *Miner) AddTokens(toks [][]byte) (int, bool) {
	if id := m.search(toks); id >= 0 {
		c := &m.clusters[id]
		for i, t := range toks {
			if c.template[i] != Wildcard && c.template[i] != string(t) {
				c.template[i] = Wildcard
			}
		}
		c.size++
		return id, true
	}
	if m.cfg.MaxClusters > 0 && len(m.clusters) >= m.cfg.MaxClusters {
		return -1, false
	}
	tmpl := make([]string, len(toks))
	for i, t := range toks {
		tmpl[i] = string(t)
	}
	id := len(m.clusters)
	m.clusters = append(m.clusters, cluster{template: tmpl, size: 1})
	m.insert(id, tmpl)
	return id, true
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

// routeDepth is how many tokens route a message below the length layer.
func (m *Miner) routeDepth() int { return m.cfg.Depth - 2 }

func (m *Miner) search(toks [][]byte) int {
	n := m.byLen[len(toks)]
	if n == nil {
		return -1
	}
	depth := 1
	for _, t := range toks {
		if depth >= m.routeDepth() {
			break
		}
		if c := n.children[string(t)]; c != nil {
			n = c
		} else if c := n.children[Wildcard]; c != nil {
			n = c
		} else {
			return -1
		}
		depth++
	}
	best, bestSim, bestPar := -1, -1, -1
	for _, id := range n.leaf {
		sim, par := 0, 0
		for i, w := range m.clusters[id].template {
			if w == Wildcard {
				par++
				continue
			}
			if w == string(toks[i]) {
				sim++
			}
		}
		if sim > bestSim || (sim == bestSim && par > bestPar) {
			best, bestSim, bestPar = id, sim, par
		}
	}
	if best < 0 {
		return -1
	}
	ratio := 1.0
	if len(toks) > 0 {
		ratio = float64(bestSim) / float64(len(toks))
	}
	if ratio >= m.cfg.Similarity {
		return best
	}
	return -1
}

func newNode() *node { return &node{children: make(map[string]*node)} }

func (m *Miner) insert(id int, tmpl []string) {
	n := m.byLen[len(tmpl)]
	if n == nil {
		n = newNode()
		m.byLen[len(tmpl)] = n
	}
	depth := 1
	for _, t := range tmpl {
		if depth >= m.routeDepth() {
			break
		}
		if c := n.children[t]; c != nil {
			n = c
			depth++
			continue
		}
		_, hasWild := n.children[Wildcard]
		switch {
		case hasDigit(t):
			if !hasWild {
				n.children[Wildcard] = newNode()
			}
			n = n.children[Wildcard]
		case hasWild:
			if len(n.children) < m.cfg.MaxChildren {
				c := newNode()
				n.children[t] = c
				n = c
			} else {
				n = n.children[Wildcard]
			}
		default:
			switch {
			case len(n.children)+1 < m.cfg.MaxChildren:
				c := newNode()
				n.children[t] = c
				n = c
			case len(n.children)+1 == m.cfg.MaxChildren:
				c := newNode()
				n.children[Wildcard] = c
				n = c
			default:
				n = n.children[Wildcard]
			}
		}
		depth++
	}
	n.leaf = append(n.leaf, id)
}

// Cluster is one mined template.
type Cluster struct {
	ID       int      // creation order
	Template []string // tokens; variable positions are Wildcard
	Size     int      // messages mined into it
}

// Cluster returns cluster id. The template is shared with the Miner and
// changes as more messages are mined.
func (m *Miner) Cluster(id int) Cluster {
	c := m.clusters[id]
	return Cluster{ID: id, Template: c.template, Size: c.size}
}

// Clusters returns every cluster in creation order.
func (m *Miner) Clusters() []Cluster {
	out := make([]Cluster, len(m.clusters))
	for i := range m.clusters {
		out[i] = m.Cluster(i)
	}
	return out
}

// AppendTemplate appends cluster id's template, tokens joined by single
// spaces, to dst.
func (m *Miner) AppendTemplate(dst []byte, id int) []byte {
	for i, t := range m.clusters[id].template {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, t...)
	}
	return dst
}

// TemplateString returns cluster id's template as a string.
func (m *Miner) TemplateString(id int) string {
	return strings.Join(m.clusters[id].template, " ")
}
