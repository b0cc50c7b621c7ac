// Package textfmt formats figures and phrases the same way wherever a
// person reads them: report tables, notes and command output. A figure
// printed as 15.05× in a table is 15.05× in the note beside it, and one
// key is "1 key".
package textfmt
