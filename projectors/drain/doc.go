// Package drain mines log templates with a Drain-style fixed-depth prefix
// tree: messages are routed by token count and leading tokens, then join the
// most similar cluster of their leaf when the share of equal tokens reaches
// a threshold; positions that differ become the wildcard <*>.
//
// Redact messages first: typed placeholders (<IP>, <SECRET>, …) are constant
// tokens, so messages that differ only in sensitive values group together.
package drain
