// Package words writes counts in English: "1 GPU", "4 GPUs".
package words

import "strconv"

// Count is n followed by the noun, singular when n is 1 and plural
// otherwise ("1 policy", "3 policies").
func Count(n int, singular, plural string) string {
	if n == 1 {
		return "1 " + singular
	}
	return strconv.Itoa(n) + " " + plural
}

// Plural is the noun with an s when n is not 1 ("GPU", "GPUs").
func Plural(n int, noun string) string {
	return Count(n, noun, noun+"s")
}
