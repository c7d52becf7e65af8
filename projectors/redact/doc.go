// Package redact masks what must not reach a model in the text of tool
// outputs, through a canonical.Masker: placeholders (<SECRET>, <IP>, …) by
// default, the run's handles at the boundary.
//
// It masks by default what looks generated. A message passes through a
// fixed list of passes, each explainable in a sentence (see the README's
// Redaction section); each reads the message as it is and names the
// ranges it masks, with their kind, and the output is written once:
//
//   - blocks: private-key PEM blocks, and the frames of stack traces, cut;
//   - SQL: the string and number literals of a statement;
//   - credential positions: the value after a credential word in the
//     syntaxes it stands in (URL userinfo, key=value and JSON keys, flags,
//     directives, clauses, prompts, element text, name:secret files,
//     positional arguments of login commands), a table of words and
//     syntaxes;
//   - identifiers: e-mail, IP and MAC addresses, hosts, pods, containers,
//     process ids, user names, cloud accounts, card numbers;
//   - generated values: every value whose characters look random, unless
//     its context proves it public (the table proofsTable).
//
// Every pass costs time linear in the message, whatever it holds; the
// package's adversarial tests check it for every literal of Vocabulary.
// One scan first finds which trigger bytes the message holds and which of
// the rarer bigrams of the literals the passes look for; a pass whose
// triggers are absent is skipped at the cost of a bit test.
package redact

//go:generate go run ./internal/wordgen -o words_table.go -root ../..
