// Package cosmossql parses and evaluates the subset of the Cosmos DB NoSQL
// query language that the embedded server supports:
//
//	SELECT [TOP n] * | VALUE <expr> | <expr> [AS name], …
//	FROM <container> [[AS] alias]
//	[WHERE <expr>]
//	[ORDER BY <path> [ASC|DESC]]
//
// Expressions: paths (c.a.b, c["a"], c.tags[0]), string, number, true,
// false, null and undefined literals, @parameters, array and object
// literals, = != <> < <= > >=, IN (…), AND, OR, NOT, parentheses, and the
// functions STARTSWITH, ENDSWITH, CONTAINS (with the optional ignore-case
// argument), IS_DEFINED, IS_NULL, ARRAY_CONTAINS (with the optional partial
// argument) and the aggregate COUNT. Comparisons follow the service's rules:
// values of different types compare as undefined, and a WHERE that is not
// true drops the item. ORDER BY sorts undefined < null < false < true <
// numbers < strings < arrays < objects.
//
// Anything else — JOIN, GROUP BY, DISTINCT, OFFSET/LIMIT, arithmetic,
// subqueries, other functions — is refused with an error that names the
// construct, so that a query this package does not understand never
// silently matches the wrong items.
package cosmossql

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Param is one entry of a query's "parameters".
type Param struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Query is a parsed query.
type Query struct {
	alias     string
	top       int // -1: no TOP
	star      bool
	value     expr         // SELECT VALUE <value>
	fields    []projection // SELECT a, b AS x
	where     expr         // nil: every item
	orderBy   expr         // nil: no ORDER BY
	desc      bool
	aggregate string // "Count" when the selection holds COUNT
}

type projection struct {
	name string
	e    expr
}

// Error is a query this package refuses. Construct names what is not
// supported ("GROUP BY", "function LOWER"), empty for a plain syntax error.
type Error struct {
	Construct string
	Msg       string
}

func (e *Error) Error() string {
	if e.Construct != "" {
		return "unsupported construct " + e.Construct + ": " + e.Msg
	}
	return e.Msg
}

func unsupported(construct, format string, args ...any) *Error {
	return &Error{Construct: construct, Msg: fmt.Sprintf(format, args...)}
}

func syntaxErr(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// Parse parses a query with its parameters.
func Parse(text string, params []Param) (*Query, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	values := make(map[string]any, len(params))
	for _, p := range params {
		if !strings.HasPrefix(p.Name, "@") {
			return nil, syntaxErr("query parameter name %q must start with @", p.Name)
		}
		values[p.Name] = normalize(p.Value)
	}
	p := &parser{toks: toks, params: values}
	q, err := p.query()
	if err != nil {
		return nil, err
	}
	return q, nil
}

type tokenKind int

const (
	tokIdent tokenKind = iota
	tokParam
	tokString
	tokNumber
	tokSymbol
	tokEOF
)

type token struct {
	kind tokenKind
	text string // identifier, parameter name, symbol, decoded string, number text
}

func lex(q string) ([]token, error) {
	var toks []token
	rs := []rune(q)
	for i := 0; i < len(rs); {
		ch := rs[i]
		switch {
		case unicode.IsSpace(ch):
			i++
		case ch == '-' && i+1 < len(rs) && rs[i+1] == '-':
			for i < len(rs) && rs[i] != '\n' { // a comment to the end of the line
				i++
			}
		case strings.ContainsRune("()[]{},.:*", ch):
			toks = append(toks, token{tokSymbol, string(ch)})
			i++
		case ch == '!' || ch == '<' || ch == '>' || ch == '=':
			op := string(ch)
			if i+1 < len(rs) && (rs[i+1] == '=' || (ch == '<' && rs[i+1] == '>')) {
				op += string(rs[i+1])
			}
			if op == "!" || op == "==" {
				return nil, syntaxErr("unexpected %q in query", op)
			}
			toks = append(toks, token{tokSymbol, op})
			i += len(op)
		case ch == '+' || ch == '/' || ch == '%' || ch == '|' || ch == '&' || ch == '^' || ch == '~' || ch == '?':
			return nil, unsupported("operator "+string(ch), "arithmetic, string concatenation, bitwise and coalesce operators are not supported")
		case ch == '\'' || ch == '"':
			s, n, err := lexString(rs[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokString, s})
			i += n
		case unicode.IsDigit(ch) || (ch == '-' && i+1 < len(rs) && unicode.IsDigit(rs[i+1])):
			j := i + 1
			for j < len(rs) && (unicode.IsDigit(rs[j]) || rs[j] == '.' || rs[j] == 'e' || rs[j] == 'E' ||
				((rs[j] == '-' || rs[j] == '+') && (rs[j-1] == 'e' || rs[j-1] == 'E'))) {
				j++
			}
			if _, err := strconv.ParseFloat(string(rs[i:j]), 64); err != nil {
				return nil, syntaxErr("invalid number %q", string(rs[i:j]))
			}
			toks = append(toks, token{tokNumber, string(rs[i:j])})
			i = j
		case ch == '-':
			return nil, unsupported("operator -", "arithmetic is not supported")
		case ch == '@' || ch == '_' || ch == '$' || unicode.IsLetter(ch):
			j := i + 1
			for j < len(rs) && (rs[j] == '_' || rs[j] == '$' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			kind := tokIdent
			if ch == '@' {
				kind = tokParam
				if j == i+1 {
					return nil, syntaxErr("a parameter needs a name after @")
				}
			}
			toks = append(toks, token{kind, string(rs[i:j])})
			i = j
		default:
			return nil, syntaxErr("unexpected character %q in query", ch)
		}
	}
	return append(toks, token{kind: tokEOF}), nil
}

// lexString decodes a quoted literal starting at rs[0], returning the value
// and the number of runes consumed.
func lexString(rs []rune) (string, int, error) {
	quote := rs[0]
	var sb strings.Builder
	for i := 1; i < len(rs); i++ {
		switch rs[i] {
		case quote:
			return sb.String(), i + 1, nil
		case '\\':
			if i+1 >= len(rs) {
				return "", 0, syntaxErr("unterminated string literal")
			}
			i++
			switch rs[i] {
			case 'n':
				sb.WriteRune('\n')
			case 't':
				sb.WriteRune('\t')
			case 'r':
				sb.WriteRune('\r')
			case 'b':
				sb.WriteRune('\b')
			case 'f':
				sb.WriteRune('\f')
			case '\\', '\'', '"', '/':
				sb.WriteRune(rs[i])
			case 'u':
				if i+4 >= len(rs) {
					return "", 0, syntaxErr("invalid \\u escape in string literal")
				}
				n, err := strconv.ParseUint(string(rs[i+1:i+5]), 16, 32)
				if err != nil {
					return "", 0, syntaxErr("invalid \\u escape in string literal")
				}
				sb.WriteRune(rune(n))
				i += 4
			default:
				return "", 0, syntaxErr("unsupported escape \\%c in string literal", rs[i])
			}
		default:
			sb.WriteRune(rs[i])
		}
	}
	return "", 0, syntaxErr("unterminated string literal")
}

type parser struct {
	toks   []token
	pos    int
	alias  string
	params map[string]any
	// aggregates counts aggregate calls while parsing the selection.
	aggregates int
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) peekAt(n int) token {
	if p.pos+n < len(p.toks) {
		return p.toks[p.pos+n]
	}
	return token{kind: tokEOF}
}

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

func (p *parser) isKeyword(kw string) bool {
	t := p.peek()
	return t.kind == tokIdent && strings.EqualFold(t.text, kw)
}

func (p *parser) keyword(kw string) bool {
	if p.isKeyword(kw) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) isSymbol(sym string) bool {
	t := p.peek()
	return t.kind == tokSymbol && t.text == sym
}

func (p *parser) symbol(sym string) bool {
	if p.isSymbol(sym) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expectSymbol(sym string) error {
	if !p.symbol(sym) {
		return syntaxErr("expected %q, found %s", sym, describe(p.peek()))
	}
	return nil
}

func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "end of query"
	case tokString:
		return fmt.Sprintf("string %q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// Keywords that cannot be an alias, and the constructs refused by name.
var reserved = map[string]bool{"select": true, "from": true, "where": true, "and": true, "or": true, "not": true,
	"top": true, "value": true, "order": true, "by": true, "join": true, "in": true, "as": true, "asc": true,
	"desc": true, "group": true, "offset": true, "limit": true, "distinct": true, "between": true, "like": true,
	"true": true, "false": true, "null": true, "undefined": true, "exists": true, "array": true, "having": true}

// refusedClause names a clause keyword the subset does not support.
func (p *parser) refusedClause() *Error {
	t := p.peek()
	if t.kind != tokIdent {
		return nil
	}
	switch strings.ToUpper(t.text) {
	case "JOIN":
		return unsupported("JOIN", "joins are not supported")
	case "GROUP":
		return unsupported("GROUP BY", "grouping is not supported")
	case "OFFSET", "LIMIT":
		return unsupported("OFFSET LIMIT", "OFFSET/LIMIT paging is not supported; use continuations")
	case "DISTINCT":
		return unsupported("DISTINCT", "DISTINCT is not supported")
	case "HAVING":
		return unsupported("HAVING", "HAVING is not supported")
	}
	return nil
}

func (p *parser) query() (*Query, error) {
	if !p.keyword("SELECT") {
		return nil, syntaxErr("a query starts with SELECT, found %s", describe(p.peek()))
	}
	q := &Query{top: -1}
	if e := p.refusedClause(); e != nil {
		return nil, e
	}
	if p.keyword("TOP") {
		n, err := p.topCount()
		if err != nil {
			return nil, err
		}
		q.top = n
	}
	if e := p.refusedClause(); e != nil {
		return nil, e
	}
	// The selection names the alias before FROM declares it: parse it after.
	selStart := p.pos
	depth := 0
	for {
		t := p.peek()
		if t.kind == tokEOF {
			return nil, syntaxErr("expected FROM, found end of query")
		}
		if t.kind == tokSymbol && (t.text == "(" || t.text == "[" || t.text == "{") {
			depth++
		}
		if t.kind == tokSymbol && (t.text == ")" || t.text == "]" || t.text == "}") {
			depth--
		}
		if depth == 0 && t.kind == tokIdent && strings.EqualFold(t.text, "FROM") {
			break
		}
		p.next()
	}
	selEnd := p.pos
	p.next() // FROM
	container := p.next()
	if container.kind != tokIdent || reserved[strings.ToLower(container.text)] {
		if container.kind == tokSymbol && container.text == "(" {
			return nil, unsupported("subquery", "FROM takes a container name, not a subquery")
		}
		return nil, syntaxErr("expected a container name after FROM, found %s", describe(container))
	}
	p.alias = container.text
	if p.keyword("AS") || (p.peek().kind == tokIdent && !reserved[strings.ToLower(p.peek().text)]) {
		t := p.next()
		if t.kind != tokIdent || reserved[strings.ToLower(t.text)] {
			return nil, syntaxErr("expected an alias after AS, found %s", describe(t))
		}
		p.alias = t.text
	}
	if p.isSymbol(".") || p.isSymbol("[") {
		return nil, unsupported("FROM path", "FROM must name the container, not a path inside it")
	}
	if p.isKeyword("IN") {
		return nil, unsupported("FROM … IN", "iterating an array in FROM is not supported")
	}
	if e := p.refusedClause(); e != nil {
		return nil, e
	}
	if p.keyword("WHERE") {
		w, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.aggregates > 0 {
			return nil, unsupported("aggregate in WHERE", "aggregates are only supported in the selection")
		}
		q.where = w
	}
	if e := p.refusedClause(); e != nil {
		return nil, e
	}
	if p.keyword("ORDER") {
		if !p.keyword("BY") {
			return nil, syntaxErr("expected BY after ORDER, found %s", describe(p.peek()))
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		if _, ok := e.(pathExpr); !ok {
			return nil, unsupported("ORDER BY expression", "ORDER BY takes one property path, found %s", e)
		}
		q.orderBy = e
		if p.keyword("DESC") {
			q.desc = true
		} else {
			p.keyword("ASC")
		}
		if p.isSymbol(",") {
			return nil, unsupported("ORDER BY on more than one path", "ORDER BY takes one property path")
		}
	}
	if e := p.refusedClause(); e != nil {
		return nil, e
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, syntaxErr("unexpected %s", describe(t))
	}
	end := p.pos
	// Now the selection, with the alias known.
	p.pos = selStart
	p.toks[selEnd] = token{kind: tokEOF} // stop at FROM
	if err := p.selection(q); err != nil {
		return nil, err
	}
	p.toks[selEnd] = token{tokIdent, "FROM"}
	if p.pos != selEnd {
		return nil, syntaxErr("unexpected %s before FROM", describe(p.toks[p.pos]))
	}
	p.pos = end
	q.alias = p.alias
	if q.orderBy != nil && q.aggregate != "" {
		return nil, unsupported("ORDER BY with an aggregate", "an aggregate query has one result and no order")
	}
	return q, nil
}

func (p *parser) topCount() (int, error) {
	t := p.next()
	var v any
	switch t.kind {
	case tokNumber:
		v, _ = strconv.ParseFloat(t.text, 64)
	case tokParam:
		var ok bool
		if v, ok = p.params[t.text]; !ok {
			return 0, syntaxErr("parameter %s is used but not supplied", t.text)
		}
	default:
		return 0, syntaxErr("TOP takes a number, found %s", describe(t))
	}
	f, ok := v.(float64)
	if !ok || f < 0 || f != float64(int(f)) {
		return 0, syntaxErr("TOP takes a non-negative integer, got %v", v)
	}
	return int(f), nil
}

func (p *parser) selection(q *Query) error {
	if e := p.refusedClause(); e != nil {
		return e
	}
	if p.symbol("*") {
		q.star = true
		return nil
	}
	if p.keyword("VALUE") {
		if e := p.refusedClause(); e != nil {
			return e
		}
		e, err := p.expr()
		if err != nil {
			return err
		}
		q.value = e
		return p.checkAggregate(q)
	}
	for {
		e, err := p.expr()
		if err != nil {
			return err
		}
		name := ""
		if p.keyword("AS") {
			t := p.next()
			if t.kind != tokIdent {
				return syntaxErr("expected a name after AS, found %s", describe(t))
			}
			name = t.text
		} else if pe, ok := e.(pathExpr); ok && len(pe.steps) > 0 {
			if s, ok := pe.steps[len(pe.steps)-1].(string); ok {
				name = s
			}
		}
		if name == "" {
			name = "$" + strconv.Itoa(len(q.fields)+1)
		}
		q.fields = append(q.fields, projection{name: name, e: e})
		if !p.symbol(",") {
			break
		}
	}
	return p.checkAggregate(q)
}

func (p *parser) checkAggregate(q *Query) error {
	if p.aggregates == 0 {
		return nil
	}
	if len(q.fields) > 1 || p.aggregates > 1 {
		return unsupported("several aggregates", "one COUNT per query is supported")
	}
	q.aggregate = "Count"
	return nil
}

// Expressions, lowest precedence first.

func (p *parser) expr() (expr, error) { return p.or() }

func (p *parser) or() (expr, error) {
	left, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		right, err := p.and()
		if err != nil {
			return nil, err
		}
		left = orExpr{left, right}
	}
	return left, nil
}

func (p *parser) and() (expr, error) {
	left, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		right, err := p.not()
		if err != nil {
			return nil, err
		}
		left = andExpr{left, right}
	}
	return left, nil
}

func (p *parser) not() (expr, error) {
	if p.keyword("NOT") {
		inner, err := p.not()
		if err != nil {
			return nil, err
		}
		return notExpr{inner}, nil
	}
	return p.comparison()
}

var comparisonOps = map[string]string{"=": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

func (p *parser) comparison() (expr, error) {
	left, err := p.primary()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == tokSymbol {
		if op, ok := comparisonOps[t.text]; ok {
			p.next()
			right, err := p.primary()
			if err != nil {
				return nil, err
			}
			return compareExpr{op, left, right}, nil
		}
	}
	negated := false
	if p.isKeyword("NOT") && p.peekAt(1).kind == tokIdent && strings.EqualFold(p.peekAt(1).text, "IN") {
		p.next()
		negated = true
	}
	if p.keyword("IN") {
		if err := p.expectSymbol("("); err != nil {
			return nil, err
		}
		var list []expr
		for {
			e, err := p.primary()
			if err != nil {
				return nil, err
			}
			list = append(list, e)
			if !p.symbol(",") {
				break
			}
		}
		if err := p.expectSymbol(")"); err != nil {
			return nil, err
		}
		var in expr = inExpr{left, list}
		if negated {
			in = notExpr{in}
		}
		return in, nil
	}
	switch {
	case p.isKeyword("BETWEEN"):
		return nil, unsupported("BETWEEN", "use >= and <= instead")
	case p.isKeyword("LIKE"):
		return nil, unsupported("LIKE", "use STARTSWITH, ENDSWITH or CONTAINS instead")
	}
	return left, nil
}

func (p *parser) primary() (expr, error) {
	t := p.next()
	switch t.kind {
	case tokString:
		return literal{t.text}, nil
	case tokNumber:
		f, _ := strconv.ParseFloat(t.text, 64)
		return literal{f}, nil
	case tokParam:
		v, ok := p.params[t.text]
		if !ok {
			return nil, syntaxErr("parameter %s is used but not supplied", t.text)
		}
		return literal{v}, nil
	case tokSymbol:
		switch t.text {
		case "(":
			if p.isKeyword("SELECT") {
				return nil, unsupported("subquery", "subqueries are not supported")
			}
			inner, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expectSymbol(")"); err != nil {
				return nil, err
			}
			return inner, nil
		case "[":
			var elems []expr
			for !p.isSymbol("]") {
				e, err := p.expr()
				if err != nil {
					return nil, err
				}
				elems = append(elems, e)
				if !p.symbol(",") {
					break
				}
			}
			if err := p.expectSymbol("]"); err != nil {
				return nil, err
			}
			return arrayExpr{elems}, nil
		case "{":
			var obj objectExpr
			for !p.isSymbol("}") {
				k := p.next()
				if k.kind != tokString && k.kind != tokIdent {
					return nil, syntaxErr("expected a property name in an object literal, found %s", describe(k))
				}
				if err := p.expectSymbol(":"); err != nil {
					return nil, err
				}
				e, err := p.expr()
				if err != nil {
					return nil, err
				}
				obj.keys = append(obj.keys, k.text)
				obj.values = append(obj.values, e)
				if !p.symbol(",") {
					break
				}
			}
			if err := p.expectSymbol("}"); err != nil {
				return nil, err
			}
			return obj, nil
		}
		return nil, syntaxErr("unexpected %s", describe(t))
	case tokIdent:
		switch strings.ToLower(t.text) {
		case "true":
			return literal{true}, nil
		case "false":
			return literal{false}, nil
		case "null":
			return literal{nil}, nil
		case "undefined":
			return literal{undefined}, nil
		case "exists", "array":
			return nil, unsupported(strings.ToUpper(t.text), "subqueries are not supported")
		}
		if p.isSymbol("(") {
			return p.call(t.text)
		}
		if t.text != p.alias {
			if p.alias == "" {
				// The selection is parsed after FROM; here the alias is unknown only in
				// FROM-less queries, which the grammar refuses earlier.
				return nil, syntaxErr("unknown identifier %q", t.text)
			}
			return nil, syntaxErr("identifier %q is not the collection alias %q", t.text, p.alias)
		}
		path := pathExpr{root: t.text}
		for {
			switch {
			case p.symbol("."):
				s := p.next()
				if s.kind != tokIdent {
					return nil, syntaxErr("expected a property name after '.', found %s", describe(s))
				}
				path.steps = append(path.steps, s.text)
			case p.symbol("["):
				s := p.next()
				switch s.kind {
				case tokString:
					path.steps = append(path.steps, s.text)
				case tokNumber:
					n, err := strconv.Atoi(s.text)
					if err != nil || n < 0 {
						return nil, syntaxErr("an array index must be a non-negative integer, found %s", s.text)
					}
					path.steps = append(path.steps, n)
				default:
					return nil, syntaxErr("expected a property name or index in [], found %s", describe(s))
				}
				if err := p.expectSymbol("]"); err != nil {
					return nil, err
				}
			default:
				return path, nil
			}
		}
	}
	return nil, syntaxErr("unexpected %s", describe(t))
}

// Functions: name (upper case) -> allowed argument counts.
var functions = map[string][2]int{
	"STARTSWITH": {2, 3}, "ENDSWITH": {2, 3}, "CONTAINS": {2, 3},
	"IS_DEFINED": {1, 1}, "IS_NULL": {1, 1}, "ARRAY_CONTAINS": {2, 3}, "COUNT": {1, 1},
}

func (p *parser) call(name string) (expr, error) {
	upper := strings.ToUpper(name)
	arity, ok := functions[upper]
	if !ok {
		switch upper {
		case "SUM", "AVG", "MIN", "MAX":
			return nil, unsupported("aggregate "+upper, "the only aggregate supported is COUNT")
		}
		return nil, unsupported("function "+upper, "supported functions: STARTSWITH, ENDSWITH, CONTAINS, IS_DEFINED, IS_NULL, ARRAY_CONTAINS, COUNT")
	}
	_ = p.next() // (
	var args []expr
	for !p.isSymbol(")") {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		args = append(args, e)
		if !p.symbol(",") {
			break
		}
	}
	if err := p.expectSymbol(")"); err != nil {
		return nil, err
	}
	if len(args) < arity[0] || len(args) > arity[1] {
		if arity[0] == arity[1] {
			return nil, syntaxErr("%s takes %d argument(s), got %d", upper, arity[0], len(args))
		}
		return nil, syntaxErr("%s takes %d or %d arguments, got %d", upper, arity[0], arity[1], len(args))
	}
	if upper == "COUNT" {
		p.aggregates++
		return countExpr{args[0]}, nil
	}
	return callExpr{upper, args}, nil
}

// normalize turns a parameter value into the types encoding/json decodes
// into (float64 for every number), so that comparisons see one type.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float32:
		return float64(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}
