package tokenizer_test

import (
	"fmt"

	"github.com/spoc-project/spoc/tokenizer"
)

// Cut returns text of an exact token length that can be concatenated with
// other cuts without changing the total.
func ExampleTokenizer_Cut() {
	tok, err := tokenizer.New(tokenizer.O200kBase)
	if err != nil {
		panic(err)
	}
	text := "func add(a, b int) int {\n\treturn a + b\n}\n\nfunc sub(a, b int) int {\n\treturn a - b\n}\n"
	a, _ := tok.Cut(text, 12)
	b, _ := tok.Cut(text, 5)
	n, _ := tok.Count(a + b)
	fmt.Println(n)
	// Output: 17
}
