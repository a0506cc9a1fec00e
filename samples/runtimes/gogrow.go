// samples/runtimes/gogrow.go: a Go program's growth in a function the
// compiler inlines: grow() fills 64 KiB slices (16 page faults each) and
// keeps them; main() calls it, and Go inlines it there, so only the DWARF's
// inlined-subroutine entries and line table name it.
//
// Usage: go build -o gogrow gogrow.go && ./gogrow [N]
//
// Prints the truth: the slices kept, the function, and its file and line.
package main

import (
	"fmt"
	"os"
	"strconv"
)

var keep [][]byte

func grow(n int) {
	for i := 0; i < n; i++ {
		b := make([]byte, 64<<10)
		for j := range b {
			b[j] = 1 // gogrow: the line that faults
		}
		keep = append(keep, b)
	}
}

func main() {
	n := 200
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	grow(n)
	fmt.Printf("gogrow: %d slices of 65536 bytes from main.grow, gogrow.go:23\n", len(keep))
}
