package drain

import (
	"bytes"
	"slices"
	"strings"

	"github.com/toolcanon/toolcanon/canonical"
)

// Wildcard marks a variable position of a template.
const Wildcard = "<*>"

const defaultCandidates = 16

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
	// MaxCandidates bounds the clusters a message is compared with. A leaf
	// of the tree with at most this many clusters is searched whole, as
	// Drain does; a larger one (which hostile input builds, and real logs
	// rarely do) only through its MaxCandidates most recently used clusters.
	// Default 16.
	MaxCandidates int
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
	cfg Config
	// short holds the nodes of the token-count layer for counts below
	// shortLen, by count; long the others.
	short    []*node
	long     map[int]*node
	clusters []cluster
	toks     [][]byte
	buf      []byte
	canon    []byte // a message with its handles as placeholders
}

// shortLen bounds the token counts whose nodes are found by index.
const shortLen = 256

// smallChildren is how many children a node finds by scanning their
// tokens; a node with more finds them through a map.
const smallChildren = 8

type node struct {
	// The children: keys[i] routes to kids[i] while there are at most
	// smallChildren of them, index holds them all after that. wild is the
	// child of Wildcard, also among them; count is how many there are.
	keys  []string
	kids  []*node
	index map[string]*node
	wild  *node
	count int
	// need is, on a node of the token-count layer, how many equal tokens a
	// message of that count needs to join a cluster.
	need int
	leaf []int // cluster ids, in creation order
	// recent holds the MaxCandidates clusters of the leaf used last, most
	// recent first, once the leaf has more clusters than that: a message is
	// compared with these only, so that its cost is bounded whatever the
	// leaf holds.
	recent []int
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
	if cfg.MaxCandidates <= 0 {
		cfg.MaxCandidates = defaultCandidates
	}
	return &Miner{cfg: cfg}
}

// Reset forgets every cluster and keeps the configuration.
func (m *Miner) Reset() {
	clear(m.short)
	clear(m.long)
	m.clusters = m.clusters[:0]
}

// Len returns the number of clusters.
func (m *Miner) Len() int { return len(m.clusters) }

// Add mines one message and returns the id of its cluster (0, 1, … in
// creation order). It reports false when the message matched no cluster
// and MaxClusters is reached. A masked value is one class of token: each
// handle (<SECRET:k7Qp2xA9>) is mined as its placeholder (<SECRET>), so
// that messages differing only in a masked value group.
func (m *Miner) Add(msg []byte) (int, bool) {
	// Only a message with a handle is copied, from its first handle on:
	// placeholders and other '<' stay where they are.
	if k := bytes.IndexByte(msg, '<'); k >= 0 {
		if i, _ := canonical.IndexHandle(msg[k:]); i >= 0 {
			m.canon = appendPlaceholders(append(m.canon[:0], msg[:k+i]...), msg[k+i:])
			msg = m.canon
		}
	}
	m.toks = TokenizeN(m.toks[:0], msg, m.cfg.MaxTokens)
	return m.AddTokens(m.toks)
}

// appendPlaceholders appends msg to dst with each handle written as the
// placeholder of its kind.
func appendPlaceholders(dst, msg []byte) []byte {
	for {
		i, n := canonical.IndexHandle(msg)
		if i < 0 {
			return append(dst, msg...)
		}
		kind, _, _, _ := canonical.ParseHandle(msg[i:])
		dst = canonical.Placeholders.AppendMask(append(dst, msg[:i]...), kind, nil)
		msg = msg[i+n:]
	}
}

// AddString is Add for a string.
func (m *Miner) AddString(msg string) (int, bool) { return m.Add([]byte(msg)) }

// AddTokens mines one tokenized message. See Add.
func (m *Miner) AddTokens(toks [][]byte) (int, bool) {
	if m.cfg.MaxTokens > 0 && len(toks) > m.cfg.MaxTokens {
		toks = toks[:m.cfg.MaxTokens]
	}
	if id, sim, par := m.search(toks); id >= 0 {
		c := &m.clusters[id]
		// Positions that are neither wildcards nor equal become wildcards;
		// when every position is one or the other, none changes.
		if sim+par < len(toks) {
			for i, t := range toks {
				if c.template[i] != Wildcard && c.template[i] != string(t) {
					c.template[i] = Wildcard
				}
			}
		}
		c.size++
		return id, true
	}
	if m.cfg.MaxClusters > 0 && len(m.clusters) >= m.cfg.MaxClusters {
		return -1, false
	}
	// The template's tokens share one string.
	m.buf = m.buf[:0]
	for _, t := range toks {
		m.buf = append(m.buf, t...)
	}
	all := string(m.buf)
	tmpl := make([]string, len(toks))
	off := 0
	for i, t := range toks {
		tmpl[i] = all[off : off+len(t)]
		off += len(t)
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

// search returns the cluster a message joins, with the positions where its
// template equals toks (sim) and holds wildcards (par), or -1.
func (m *Miner) search(toks [][]byte) (best, bestSim, bestPar int) {
	n, need := m.leafOf(toks)
	if n == nil {
		return -1, 0, 0
	}
	candidates := n.leaf
	if len(n.leaf) > m.cfg.MaxCandidates {
		candidates = n.recent
	}
	best, bestSim, bestPar = -1, -1, -1
	for _, id := range candidates {
		sim, par := m.similarity(id, toks, max(need, bestSim))
		if sim > bestSim || (sim == bestSim && par > bestPar) || (sim == bestSim && par == bestPar && id < best) {
			best, bestSim, bestPar = id, sim, par
		}
	}
	if best < 0 {
		return -1, 0, 0
	}
	ratio := 1.0
	if len(toks) > 0 {
		ratio = float64(bestSim) / float64(len(toks))
	}
	if ratio >= m.cfg.Similarity {
		n.use(best, m.cfg.MaxCandidates)
		return best, bestSim, bestPar
	}
	return -1, 0, 0
}

// need returns how many equal tokens a message of n tokens needs to join a
// cluster: the least k with k/n >= Similarity, computed as search's final
// test computes it. Any count above n means that none can join (a
// Similarity above 1, infinite or NaN), so the count stops there.
func (m *Miner) need(n int) int {
	need := max(0, int(m.cfg.Similarity*float64(n))-1)
	for n > 0 && need <= n && float64(need)/float64(n) < m.cfg.Similarity {
		need++
	}
	return need
}

// similarity counts the positions where cluster id's template equals toks
// (sim) and its wildcards (par). It stops early, returning -1, once the
// positions left cannot bring sim up to floor: a cluster that cannot win
// costs only part of a comparison.
func (m *Miner) similarity(id int, toks [][]byte, floor int) (sim, par int) {
	tmpl := m.clusters[id].template
	toks = toks[:len(tmpl)]
	for i, w := range tmpl {
		if sim+len(tmpl)-i < floor {
			return -1, 0
		}
		if w == Wildcard {
			par++
			continue
		}
		if w == string(toks[i]) {
			sim++
		}
	}
	return sim, par
}

// lengthNode returns the node of messages of n tokens, or nil.
func (m *Miner) lengthNode(n int) *node {
	if n < len(m.short) {
		return m.short[n]
	}
	if n < shortLen {
		return nil
	}
	return m.long[n]
}

// addLengthNode returns the node of messages of n tokens, made if missing.
func (m *Miner) addLengthNode(n int) *node {
	if ln := m.lengthNode(n); ln != nil {
		return ln
	}
	ln := &node{need: m.need(n)}
	switch {
	case n < len(m.short):
		m.short[n] = ln
	case n < shortLen:
		m.short = append(m.short, make([]*node, n+1-len(m.short))...)
		m.short[n] = ln
	default:
		if m.long == nil {
			m.long = make(map[int]*node)
		}
		m.long[n] = ln
	}
	return ln
}

// leafOf returns the leaf a message routes to, or nil, and the equal
// tokens it needs to join a cluster.
func (m *Miner) leafOf(toks [][]byte) (*node, int) {
	n := m.lengthNode(len(toks))
	if n == nil {
		return nil, 0
	}
	need := n.need
	depth := 1
	for _, t := range toks {
		if depth >= m.routeDepth() {
			break
		}
		if c := n.child(t); c != nil {
			n = c
		} else if n.wild != nil {
			n = n.wild
		} else {
			return nil, 0
		}
		depth++
	}
	return n, need
}

// child returns the child of token t, or nil.
func (n *node) child(t []byte) *node {
	if n.index != nil {
		return n.index[string(t)]
	}
	for i, k := range n.keys {
		if k == string(t) {
			return n.kids[i]
		}
	}
	return nil
}

// addChild adds a new child for token t, which has none.
func (n *node) addChild(t string) *node {
	c := &node{}
	if t == Wildcard {
		n.wild = c
	}
	n.count++
	switch {
	case n.index != nil:
		n.index[t] = c
	case len(n.keys) < smallChildren:
		n.keys = append(n.keys, t)
		n.kids = append(n.kids, c)
	default:
		n.index = make(map[string]*node, 2*smallChildren)
		for i, k := range n.keys {
			n.index[k] = n.kids[i]
		}
		n.index[t] = c
		n.keys, n.kids = nil, nil
	}
	return c
}

// use moves cluster id to the front of the leaf's recent clusters, once the
// leaf has more clusters than a search compares.
func (n *node) use(id, keep int) {
	if len(n.leaf) <= keep {
		return
	}
	if n.recent == nil {
		// The leaf just outgrew a full search: start from its newest clusters.
		n.recent = slices.Clone(n.leaf[len(n.leaf)-keep:])
		slices.Reverse(n.recent)
	}
	k := slices.Index(n.recent, id)
	if k < 0 {
		k = len(n.recent) - 1 // evict the least recently used
	}
	copy(n.recent[1:k+1], n.recent[:k])
	n.recent[0] = id
}

func (m *Miner) insert(id int, tmpl []string) {
	n := m.addLengthNode(len(tmpl))
	depth := 1
	for _, t := range tmpl {
		if depth >= m.routeDepth() {
			break
		}
		if c := n.child([]byte(t)); c != nil {
			n = c
			depth++
			continue
		}
		hasWild := n.wild != nil
		switch {
		case hasDigit(t):
			if !hasWild {
				n.addChild(Wildcard)
			}
			n = n.wild
		case hasWild:
			if n.count < m.cfg.MaxChildren {
				n = n.addChild(t)
			} else {
				n = n.wild
			}
		default:
			switch {
			case n.count+1 < m.cfg.MaxChildren:
				n = n.addChild(t)
			case n.count+1 == m.cfg.MaxChildren:
				n = n.addChild(Wildcard)
			default:
				n = n.wild
			}
		}
		depth++
	}
	n.leaf = append(n.leaf, id)
	n.use(id, m.cfg.MaxCandidates)
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
