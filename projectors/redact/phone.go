package redact

import "github.com/toolcanon/toolcanon/canonical"

// Phone numbers: personal, wherever a tool logs them. A number in E.164
// form (+254778610287, +1 (415) 555-6497, +44 20 7946 0958) is one by its
// plus sign and its length; a number in national form (254791997369,
// 0412 345 678) only in the value of a key that names a phone (kvPhone):
// bare, it is as likely an amount, a date or an id.

// Phone is the placeholder of a phone number.
const Phone = "<PHONE>"

// kPhone is the kind of a phone number.
const kPhone canonical.Kind = "PHONE"

// phoneEnd returns the end of the phone number at src[i:], digits grouped
// by single spaces, dashes, dots or an area code in brackets, 8 to 15
// digits in at most six groups; or i when there is none. plus says whether
// src[i] is the '+' of E.164, which the first digit follows.
func phoneEnd(src []byte, i int, plus bool) int {
	j := i
	if plus {
		j++
	}
	digits, groups, e := 0, 0, i
	for j < len(src) && groups < 6 {
		if src[j] == '(' {
			j++
		}
		s := j
		for j < len(src) && isDigit(src[j]) {
			j++
		}
		if j == s || j-s > 15 || (plus && groups == 0 && src[s] == '0') {
			break
		}
		digits += j - s
		groups++
		e = j
		if j < len(src) && src[j] == ')' {
			j++
		}
		if j+1 < len(src) && (src[j] == ' ' || src[j] == '-' || src[j] == '.') && (isDigit(src[j+1]) || src[j+1] == '(') {
			j++
			continue
		}
		break
	}
	if digits < 8 || digits > 15 || e < len(src) && (isAlnum(src[e]) || src[e] == '.' && e+1 < len(src) && isDigit(src[e+1])) {
		return i
	}
	return e
}

// redactPhones masks the numbers in E.164 form: a '+' that starts a word,
// then a number phoneEnd reads.
func redactPhones(rw *rewriter) {
	src := rw.src
	for i := 0; i < len(src); i++ {
		if i = nextByte(src, i, '+'); i >= len(src) {
			return
		}
		if i > 0 && (isAlnum(src[i-1]) || src[i-1] == '+') {
			continue
		}
		if e := phoneEnd(src, i, true); e > i {
			rw.mask(i, e, kPhone)
			i = e - 1
		}
	}
}
