package cosmossql

import (
	"fmt"
	"strconv"
	"strings"
)

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
func (p *parser) refusedClause() *queryError {
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
