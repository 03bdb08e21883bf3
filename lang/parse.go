package lang

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/weir-etl/weir/record"
)

// The grammar, by binding power from loosest to tightest (docs/expressions.md
// has it for users):
//
//	expr     = "let" name "=" expr ";" expr | "if" expr "{" expr "}" "else" ( "{" expr "}" | if ) | pipe
//	pipe     = ternary { "|" call }             a | f(b) is f(a, b)
//	ternary  = or [ "?" expr ":" expr ]
//	or       = and { ("||" | "or") and }
//	and      = cmp { ("&&" | "and") cmp }
//	cmp      = range { ("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not in" | "contains" | "startsWith" | "endsWith" | "matches") range }
//	range    = sum [ ".." sum ]
//	sum      = product { ("+" | "-") product }
//	product  = unary { ("*" | "/" | "%") unary }
//	unary    = ("!" | "not" | "-" | "+") unary | power
//	power    = default [ ("**" | "^") unary ]
//	default  = postfix { "??" postfix }
//	postfix  = primary { "." name | "?." name | "[" expr "]" | "?.[" expr "]" | "[" [expr] ":" [expr] "]" }
//	primary  = literal | name | name "(" args ")" | "@" name | "$" | "#" [name] | "." name
//	         | "(" expr ")" | "[" exprs "]" | "{" pairs "}" | "{" expr "}"
//
// A Pratt parser: each operator has a left binding power, and an operand is
// parsed with the power of the operator before it. It gives the user the
// positions of every node, and so errors with a caret.

type parser struct {
	src  string
	toks []token
	i    int
	// depth counts nested parentheses and calls, which a recursive
	// parser must bound: a fuzzed "((((..." would overflow the stack.
	depth int
}

const maxDepth = 200

func parse(src string) (expr, *Error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	if toks[0].kind == tEOF {
		return nil, errAt(src, 0, "the expression is empty")
	}
	x, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.unexpected(t, "an operator or the end of the expression")
	}
	return x, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) isOp(text string) bool {
	t := p.peek()
	return t.kind == tOp && t.text == text
}

func (p *parser) expect(text, what string) (token, *Error) {
	t := p.peek()
	if t.kind != tOp || t.text != text {
		return t, p.unexpected(t, what)
	}
	return p.next(), nil
}

func (p *parser) unexpected(t token, want string) *Error {
	got := fmt.Sprintf("%q", t.text)
	switch t.kind {
	case tEOF:
		return errAt(p.src, t.pos, "unexpected end of the expression; expected "+want)
	case tString:
		got = "a string"
	case tMeta:
		got = "@" + t.text
	case tElem:
		got = "#" + t.text
	}
	return errAt(p.src, t.pos, fmt.Sprintf("unexpected %s; expected %s", got, want))
}

// binding powers of the infix operators.
func infixPower(t token) (int, string) {
	switch t.kind {
	case tOp:
		switch t.text {
		case "|":
			return 1, "|"
		case "?":
			return 2, "?"
		case "||":
			return 3, "||"
		case "&&":
			return 4, "&&"
		case "==", "!=", "<", "<=", ">", ">=":
			return 5, t.text
		case "..":
			return 6, ".."
		case "+", "-":
			return 7, t.text
		case "*", "/", "%":
			return 8, t.text
		case "**", "^":
			return 10, "**"
		case "??":
			return 11, "??"
		case ".", "?.", "[":
			return 12, t.text
		}
	case tIdent:
		switch t.text {
		case "or":
			return 3, "||"
		case "and":
			return 4, "&&"
		case "in", "contains", "startsWith", "endsWith", "matches", "not":
			return 5, t.text
		}
	}
	return -1, ""
}

const unaryPower = 9

func (p *parser) expr(min int) (expr, *Error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, errAt(p.src, p.peek().pos, "the expression is nested too deeply")
	}
	left, err := p.prefix()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		bp, op := infixPower(t)
		if bp < 0 || bp <= min {
			return left, nil
		}
		p.next()
		switch op {
		case ".", "?.":
			if op == "?." && p.isOp("[") {
				p.next()
				idx, err := p.expr(0)
				if err != nil {
					return nil, err
				}
				if _, err := p.expect("]", `"]"`); err != nil {
					return nil, err
				}
				left = &indexExpr{pos(t.pos), left, idx, true}
				continue
			}
			n := p.peek()
			if n.kind != tIdent && n.kind != tNumber {
				return nil, p.unexpected(n, "a field name after "+op+` (write x["a b"] for a name that is not a word)`)
			}
			if n.kind == tNumber {
				return nil, errAt(p.src, n.pos, fmt.Sprintf("write x[%s] to index an array, not x.%s", n.text, n.text))
			}
			p.next()
			if p.isOp("(") {
				return nil, errAt(p.src, n.pos, fmt.Sprintf("there are no methods: write %s(x, ...) or x | %s(...)", n.text, n.text))
			}
			left = &memberExpr{pos(t.pos), left, n.text, op == "?."}
		case "[":
			left, err = p.index(t, left)
			if err != nil {
				return nil, err
			}
		case "?":
			a, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(":", `":" and the value when the condition is false`); err != nil {
				return nil, err
			}
			b, err := p.expr(1) // right-associative: a ? b : c ? d : e
			if err != nil {
				return nil, err
			}
			left = &condExpr{pos(t.pos), left, a, b}
		case "|":
			c := p.peek()
			if c.kind != tIdent || p.toks[p.i+1].kind != tOp || p.toks[p.i+1].text != "(" {
				return nil, p.unexpected(c, "a function call after | (x | lower())")
			}
			p.next()
			r, err := p.call(c)
			if err != nil {
				return nil, err
			}
			call := r.(*callExpr)
			call.args = append([]expr{left}, call.args...)
			left = call
		case "not":
			if n := p.peek(); n.kind != tIdent || n.text != "in" {
				return nil, p.unexpected(n, `"in" after "not" (a not in b)`)
			}
			p.next()
			r, err := p.expr(bp)
			if err != nil {
				return nil, err
			}
			left = &unaryExpr{pos(t.pos), "!", &binaryExpr{pos(t.pos), "in", left, r}}
		default:
			next := bp
			if op == "**" {
				next = bp - 1 // right-associative
			}
			r, err := p.expr(next)
			if err != nil {
				return nil, err
			}
			left = &binaryExpr{pos(t.pos), op, left, r}
		}
	}
}

// index parses what follows "[": an index or a slice.
func (p *parser) index(open token, x expr) (expr, *Error) {
	var lo, hi expr
	var err *Error
	if !p.isOp(":") {
		if lo, err = p.expr(0); err != nil {
			return nil, err
		}
		if p.isOp("]") {
			p.next()
			return &indexExpr{pos(open.pos), x, lo, false}, nil
		}
	}
	if _, err := p.expect(":", `"]" or ":"`); err != nil {
		return nil, err
	}
	if !p.isOp("]") {
		if hi, err = p.expr(0); err != nil {
			return nil, err
		}
	}
	if _, err := p.expect("]", `"]"`); err != nil {
		return nil, err
	}
	return &sliceExpr{pos(open.pos), x, lo, hi}, nil
}

func (p *parser) prefix() (expr, *Error) {
	t := p.next()
	switch t.kind {
	case tEOF:
		return nil, p.unexpected(t, "a value")
	case tNumber:
		v, err := number(t.text)
		if err != "" {
			return nil, errAt(p.src, t.pos, err)
		}
		return &litExpr{pos(t.pos), v}, nil
	case tString:
		return &litExpr{pos(t.pos), record.StringValue(t.text)}, nil
	case tMeta:
		return &metaExpr{pos(t.pos), t.text}, nil
	case tElem:
		return &elemExpr{pos(t.pos), t.text}, nil
	case tIdent:
		switch t.text {
		case "true", "false":
			return &litExpr{pos(t.pos), record.BoolValue(t.text == "true")}, nil
		case "null", "nil":
			return &litExpr{pos(t.pos), record.Value{}}, nil
		case "not":
			x, err := p.expr(unaryPower)
			if err != nil {
				return nil, err
			}
			return &unaryExpr{pos(t.pos), "!", x}, nil
		case "let":
			return p.let(t)
		case "if":
			return p.ifExpr(t)
		}
		if p.isOp("(") {
			return p.call(t)
		}
		return &identExpr{pos(t.pos), t.text}, nil
	case tOp:
		switch t.text {
		case "!", "-", "+":
			x, err := p.expr(unaryPower)
			if err != nil {
				return nil, err
			}
			// -5 is the literal -5 (and -9223372036854775808 an int).
			if l, ok := x.(*litExpr); ok && t.text == "-" && l.val.Kind() != record.Null {
				if k := l.val.Kind(); k == record.Int || k == record.Float || k == record.Number {
					if n, err := negLiteral(l.val); err == nil {
						return &litExpr{pos(t.pos), n}, nil
					}
				}
			}
			return &unaryExpr{pos(t.pos), t.text, x}, nil
		case "(":
			x, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(")", `")"`); err != nil {
				return nil, err
			}
			return x, nil
		case "[":
			var elems []expr
			for !p.isOp("]") {
				e, err := p.expr(0)
				if err != nil {
					return nil, err
				}
				elems = append(elems, e)
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			if _, err := p.expect("]", `"," or "]"`); err != nil {
				return nil, err
			}
			return &arrayExpr{pos(t.pos), elems}, nil
		case "{":
			return p.object(t)
		case ".":
			// .name inside a predicate is #.name.
			n := p.peek()
			if n.kind != tIdent {
				return nil, p.unexpected(n, "a field name after . (.price is #.price)")
			}
			p.next()
			return &memberExpr{pos(t.pos), &elemExpr{pos(t.pos), ""}, n.text, false}, nil
		case "$":
			if n := p.peek(); n.kind == tIdent && n.pos == t.pos+1 {
				return nil, errAt(p.src, t.pos, fmt.Sprintf("$%s is not supported: $ alone is the whole record; write %s or $.%s for the field", n.text, n.text, n.text))
			}
			return &rootExpr{pos(t.pos)}, nil
		}
	}
	return nil, p.unexpected(t, "a value")
}

func (p *parser) call(name token) (expr, *Error) {
	p.next() // (
	var args []expr
	for !p.isOp(")") {
		a, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		if !p.isOp(",") {
			break
		}
		p.next()
	}
	if _, err := p.expect(")", `"," or ")" in the call of `+name.text); err != nil {
		return nil, err
	}
	return &callExpr{pos(name.pos), name.text, args}, nil
}

func (p *parser) let(t token) (expr, *Error) {
	n := p.next()
	if n.kind != tIdent {
		return nil, p.unexpected(n, "a name after let (let x = ...; ...)")
	}
	if _, err := p.expect("=", `"=" (let x = value; expression)`); err != nil {
		return nil, err
	}
	val, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(";", `";" and the expression that uses `+n.text); err != nil {
		return nil, err
	}
	body, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	return &letExpr{pos(t.pos), n.text, val, body}, nil
}

func (p *parser) ifExpr(t token) (expr, *Error) {
	cond, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	block := func() (expr, *Error) {
		if _, err := p.expect("{", `"{"`); err != nil {
			return nil, err
		}
		x, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect("}", `"}"`); err != nil {
			return nil, err
		}
		return x, nil
	}
	a, err := block()
	if err != nil {
		return nil, err
	}
	if e := p.peek(); e.kind != tIdent || e.text != "else" {
		return nil, p.unexpected(e, `"else": an if needs both branches, since an expression always has a value`)
	}
	p.next()
	var b expr
	if e := p.peek(); e.kind == tIdent && e.text == "if" {
		p.next()
		b, err = p.ifExpr(e)
	} else {
		b, err = block()
	}
	if err != nil {
		return nil, err
	}
	return &condExpr{pos(t.pos), cond, a, b}, nil
}

// object parses {key: value, ...}, where a key is a name, a string or
// (expression). {} is the empty object.
func (p *parser) object(open token) (expr, *Error) {
	o := &objectExpr{pos: pos(open.pos)}
	// {# > 1}, a predicate written in braces, is its expression.
	if k, n := p.peek(), p.toks[min(p.i+1, len(p.toks)-1)]; !(k.kind == tOp && (k.text == "}" || k.text == "(")) &&
		!((k.kind == tIdent || k.kind == tString) && n.kind == tOp && n.text == ":") {
		x, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect("}", `"}"`); err != nil {
			return nil, err
		}
		return x, nil
	}
	for !p.isOp("}") {
		k := p.peek()
		var key expr
		switch {
		case k.kind == tIdent || k.kind == tString:
			p.next()
			key = &litExpr{pos(k.pos), record.StringValue(k.text)}
		case k.kind == tOp && k.text == "(":
			p.next()
			var err *Error
			if key, err = p.expr(0); err != nil {
				return nil, err
			}
			if _, err := p.expect(")", `")"`); err != nil {
				return nil, err
			}
		default:
			return nil, p.unexpected(k, `a member name, a string or (expression), as in {name: "x"}`)
		}
		if _, err := p.expect(":", `":" after the member name`); err != nil {
			return nil, err
		}
		v, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		o.keys, o.vals = append(o.keys, key), append(o.vals, v)
		if !p.isOp(",") {
			break
		}
		p.next()
	}
	if _, err := p.expect("}", `"," or "}"`); err != nil {
		return nil, err
	}
	return o, nil
}

// number reads a number literal: an int64 when it is an integer within
// range, else its exact literal (a float64 when that is the literal's own
// shortest form). It returns a message for a literal it cannot hold.
func number(lit string) (record.Value, string) {
	s := strings.ReplaceAll(lit, "_", "")
	if len(s) > 1 && s[0] == '0' && strings.ContainsRune("xXoObB", rune(s[1])) {
		i, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return record.Value{}, fmt.Sprintf("%s does not fit int64", lit)
		}
		return record.IntValue(i), ""
	}
	if strings.HasSuffix(s, ".") {
		s += "0"
	}
	if strings.HasPrefix(s, ".") {
		s = "0" + s
	}
	if len(s) > 1 && s[0] == '0' && s[1] >= '0' && s[1] <= '9' {
		return record.Value{}, fmt.Sprintf("%s: a number does not start with 0 (write 0o%s for octal)", lit, s[1:])
	}
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return record.IntValue(i), ""
		}
		return record.NumberLiteral(s), "" // exact: compared and copied, never rounded
	}
	n := record.NumberLiteral(s)
	if f, _, x := n.Form(); f == record.FloatForm {
		if fv := record.FloatValue(x); fv.Literal() == s {
			return fv, ""
		}
	}
	if _, ok := new(big.Rat).SetString(s); !ok {
		return record.Value{}, fmt.Sprintf("%s is not a number", lit)
	}
	return n, ""
}

// negLiteral is -v for a literal.
func negLiteral(v record.Value) (record.Value, error) {
	if v.Kind() == record.Number {
		lit := v.Literal()
		if strings.HasPrefix(lit, "-") {
			return record.NumberLiteral(lit[1:]), nil
		}
		if lit == "9223372036854775808" {
			return record.IntValue(-9223372036854775808), nil
		}
		return record.NumberLiteral("-" + lit), nil
	}
	return opNeg(v)
}
