package lang

import "github.com/weir-etl/weir/record"

// The syntax tree. Every node records pos, the byte offset in the source
// where it starts, so that an error can point at it.

type expr interface{ at() int }

type pos int

func (p pos) at() int { return int(p) }

type (
	// litExpr is a literal: a number, string, bool or null.
	litExpr struct {
		pos
		val record.Value
	}
	// identExpr is a bare name: a let variable or a record field.
	identExpr struct {
		pos
		name string
	}
	// metaExpr is @name: the record's metadata.
	metaExpr struct {
		pos
		name string
	}
	// rootExpr is $: the whole record value.
	rootExpr struct{ pos }
	// elemExpr is # (the element of the innermost predicate), #index,
	// #key or #acc.
	elemExpr struct {
		pos
		name string
	}
	memberExpr struct {
		pos
		x        expr
		name     string
		optional bool // ?.
	}
	indexExpr struct {
		pos
		x, index expr
		optional bool
	}
	sliceExpr struct {
		pos
		x, lo, hi expr // lo and hi may be nil
	}
	unaryExpr struct {
		pos
		op string
		x  expr
	}
	binaryExpr struct {
		pos
		op   string
		l, r expr
	}
	condExpr struct {
		pos
		cond, a, b expr
	}
	callExpr struct {
		pos
		name string
		args []expr
	}
	arrayExpr struct {
		pos
		elems []expr
	}
	objectExpr struct {
		pos
		keys, vals []expr
	}
	letExpr struct {
		pos
		name      string
		val, body expr
	}
)
