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
	"fmt"
	"sort"
	"strings"
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

// queryError is a query this package refuses. Construct names what is not
// supported ("GROUP BY", "function LOWER"), empty for a plain syntax error.
type queryError struct {
	Construct string
	Msg       string
}

func (e *queryError) Error() string {
	if e.Construct != "" {
		return "unsupported construct " + e.Construct + ": " + e.Msg
	}
	return e.Msg
}

func unsupported(construct, format string, args ...any) *queryError {
	return &queryError{Construct: construct, Msg: fmt.Sprintf(format, args...)}
}

func syntaxErr(format string, args ...any) *queryError {
	return &queryError{Msg: fmt.Sprintf(format, args...)}
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

// Match reports whether the WHERE clause is true for doc.
func (q *Query) Match(doc map[string]any) bool {
	return q.where == nil || q.where.eval(doc) == true
}

// SelectsDocument reports whether each result is the whole item (SELECT *),
// so that a caller can send the item's stored encoding as it is.
func (q *Query) SelectsDocument() bool { return q.star && q.aggregate == "" }

// Project returns the result for one matching item; ok is false when the
// result is undefined (SELECT VALUE of a missing property), which the
// service leaves out of the results.
func (q *Query) Project(doc map[string]any) (v any, ok bool) {
	switch {
	case q.star:
		return doc, true
	case q.value != nil:
		v = q.value.eval(doc)
		return v, v != undefined
	}
	out := make(map[string]any, len(q.fields))
	for _, f := range q.fields {
		if v := f.e.eval(doc); v != undefined {
			out[f.name] = v
		}
	}
	return out, true
}

// IsAggregate reports whether the query has one result, an aggregate over
// the matching items.
func (q *Query) IsAggregate() bool { return q.aggregate != "" }

// Aggregate returns the single result of an aggregate query over the
// matching items.
func (q *Query) Aggregate(matching []map[string]any) any {
	count := 0.0
	for _, doc := range matching {
		if q.countArg().eval(doc) != undefined {
			count++
		}
	}
	env := map[string]any{countKey: count}
	if q.value != nil {
		return q.value.eval(env)
	}
	out := map[string]any{}
	for _, f := range q.fields {
		if v := f.e.eval(env); v != undefined {
			out[f.name] = v
		}
	}
	return out
}

// countArg finds the COUNT's argument in the selection.
func (q *Query) countArg() expr {
	var found expr = literal{1.0}
	var walk func(e expr)
	walk = func(e expr) {
		switch x := e.(type) {
		case countExpr:
			found = x.e
		case arrayExpr:
			for _, el := range x.elems {
				walk(el)
			}
		case objectExpr:
			for _, v := range x.values {
				walk(v)
			}
		}
	}
	if q.value != nil {
		walk(q.value)
	}
	for _, f := range q.fields {
		walk(f.e)
	}
	return found
}

// ordered reports whether the query has an ORDER BY.
func (q *Query) ordered() bool { return q.orderBy != nil }

// Compare orders two matching items by the ORDER BY path (0 without
// ORDER BY); use it with a stable sort, as ties keep their order.
func (q *Query) Compare(a, b map[string]any) int {
	if q.orderBy == nil {
		return 0
	}
	c := compareValues(q.orderBy.eval(a), q.orderBy.eval(b))
	if q.desc {
		return -c
	}
	return c
}

// sortDocs orders matching items by the ORDER BY path, keeping the given order
// among equal values.
func (q *Query) sortDocs(docs []map[string]any) {
	sort.SliceStable(docs, func(i, j int) bool { return q.Compare(docs[i], docs[j]) < 0 })
}

// Top is the TOP count, or -1 without TOP.
func (q *Query) Top() int { return q.top }
