package redact

import "bytes"

// Seed phrases. A wallet's recovery phrase (BIP-39 and its kin) is 12, 15,
// 18, 21 or 24 words of three to eight or nine lower-case letters in a
// row, after a word that names it (mnemonic, seed, recovery phrase); prose
// of that length holds a word of grammar (the, of, to, and), and a list
// separates its items. Its last words are the phrase, as many as a phrase
// has, when the words that name it run into it (mnemonic team wallet
// glacier rescue …).

// phraseBreaks are words of grammar of three letters or more that no
// seed phrase's word list holds and most sentences of twelve words do (a
// word of two letters or fewer, of, to, is, ends a run by its length).
var phraseBreaks = wordSet(`the and for with from this these those are was were been being not but its his her our their
	you she they them which who whom whose what how has had does did than into would could should`)

// seedWords are the lengths of a seed phrase, in words.
var seedWords = map[int]bool{12: true, 15: true, 18: true, 21: true, 24: true}

// seedNouns name a seed phrase; seedFilter rules most other words out.
var (
	seedNouns  = wordSet(`mnemonic seed phrase recovery backup`)
	seedFilter = filterOf(seedNouns)
)

// gateMnemonic reports whether src may hold a seed phrase: eleven spaces
// at least, and a word that names one.
func gateMnemonic(src []byte, _ features) bool {
	return bytes.Count(src, []byte(" ")) >= 11 && hasWordIn(src, seedFilter, seedNouns)
}

func redactMnemonic(rw *rewriter) {
	src := rw.src
	runEnd, words := 0, 0
	var starts [25]int // the starts of the run's last 25 words, by count mod 25
	end := func() {
		// A run longer than a phrase holds the words that name it first
		// (mnemonic for team wallet …): the phrase is its last words.
		for n := min(words, 24); n >= 12; n-- {
			if seedWords[n] {
				rw.mask(starts[(words-n)%len(starts)], runEnd, kSecret)
				break
			}
		}
		words = 0
	}
	for i := 0; i < len(src); {
		s := i
		for i < len(src) && src[i] >= 'a' && src[i] <= 'z' {
			i++
		}
		n := i - s
		var buf [16]byte
		ok := n >= 3 && n <= 9 && (s == 0 || !isWord(src[s-1]) && src[s-1] != '.' && src[s-1] != '-' && src[s-1] != '/')
		if ok {
			lw := lowerInto(&buf, src[s:i])
			ok = !phraseBreaks[string(lw)]
		}
		// A word of the run is followed by one space and the next word,
		// or ends the run at a mark or the text's end.
		switch {
		case !ok:
			end()
			if i == s {
				i++
			}
			continue
		}
		starts[words%len(starts)] = s
		words++
		runEnd = i
		if i < len(src) && src[i] == ' ' && i+1 < len(src) && src[i+1] >= 'a' && src[i+1] <= 'z' {
			i++
			continue
		}
		if i < len(src) && (isWord(src[i]) || src[i] == '-' || src[i] == '.' && i+1 < len(src) && isWord(src[i+1])) {
			words = 0 // the word goes on: no word of a phrase
			continue
		}
		end()
	}
	end()
}
