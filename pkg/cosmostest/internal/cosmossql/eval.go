package cosmossql

import (
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// undefinedType is the value of a missing property and of an expression
// whose operands do not fit (comparing a string with a number).
type undefinedType struct{}

var undefined any = undefinedType{}

type expr interface {
	eval(doc map[string]any) any
	String() string // query text that parses back to the same expression
}

type literal struct{ v any }

func (l literal) eval(map[string]any) any { return l.v }

func (l literal) String() string {
	if l.v == undefined {
		return "undefined"
	}
	b, _ := json.Marshal(l.v)
	return string(b)
}

type pathExpr struct {
	root  string
	steps []any // string property names and int array indexes
}

func (p pathExpr) eval(doc map[string]any) any {
	var cur any = doc
	for _, s := range p.steps {
		switch k := s.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return undefined
			}
			if cur, ok = m[k]; !ok {
				return undefined
			}
		case int:
			a, ok := cur.([]any)
			if !ok || k >= len(a) {
				return undefined
			}
			cur = a[k]
		}
	}
	return normalize(cur)
}

func (p pathExpr) String() string {
	var b strings.Builder
	b.WriteString(p.root)
	for _, s := range p.steps {
		switch k := s.(type) {
		case string:
			if isIdentifier(k) {
				b.WriteString("." + k)
			} else {
				q, _ := json.Marshal(k)
				b.WriteString("[" + string(q) + "]")
			}
		case int:
			b.WriteString("[" + strconv.Itoa(k) + "]")
		}
	}
	return b.String()
}

func isIdentifier(s string) bool {
	if s == "" || reserved[strings.ToLower(s)] {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

type arrayExpr struct{ elems []expr }

func (a arrayExpr) eval(doc map[string]any) any {
	out := make([]any, 0, len(a.elems))
	for _, e := range a.elems {
		if v := e.eval(doc); v != undefined {
			out = append(out, v)
		}
	}
	return out
}

func (a arrayExpr) String() string {
	parts := make([]string, len(a.elems))
	for i, e := range a.elems {
		parts[i] = e.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

type objectExpr struct {
	keys   []string
	values []expr
}

func (o objectExpr) eval(doc map[string]any) any {
	out := make(map[string]any, len(o.keys))
	for i, k := range o.keys {
		if v := o.values[i].eval(doc); v != undefined {
			out[k] = v
		}
	}
	return out
}

func (o objectExpr) String() string {
	parts := make([]string, len(o.keys))
	for i, k := range o.keys {
		q, _ := json.Marshal(k)
		parts[i] = string(q) + ": " + o.values[i].String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Three-valued logic: true, false or undefined.

type andExpr struct{ l, r expr }

func (a andExpr) eval(doc map[string]any) any {
	l := a.l.eval(doc)
	if l == false {
		return false
	}
	r := a.r.eval(doc)
	switch {
	case r == false:
		return false
	case l == true && r == true:
		return true
	}
	return undefined
}

func (a andExpr) String() string { return "(" + a.l.String() + " AND " + a.r.String() + ")" }

type orExpr struct{ l, r expr }

func (o orExpr) eval(doc map[string]any) any {
	l := o.l.eval(doc)
	if l == true {
		return true
	}
	r := o.r.eval(doc)
	switch {
	case r == true:
		return true
	case l == false && r == false:
		return false
	}
	return undefined
}

func (o orExpr) String() string { return "(" + o.l.String() + " OR " + o.r.String() + ")" }

type notExpr struct{ e expr }

func (n notExpr) eval(doc map[string]any) any {
	if b, ok := n.e.eval(doc).(bool); ok {
		return !b
	}
	return undefined
}

func (n notExpr) String() string { return "(NOT " + n.e.String() + ")" }

type compareExpr struct {
	op   string
	l, r expr
}

func (c compareExpr) eval(doc map[string]any) any {
	l, r := c.l.eval(doc), c.r.eval(doc)
	if l == undefined || r == undefined {
		return undefined
	}
	switch c.op {
	case "=", "!=":
		if typeRank(l) != typeRank(r) && !(isBool(l) && isBool(r)) {
			return undefined
		}
		eq := equal(l, r)
		return eq == (c.op == "=")
	}
	var cmp int
	switch lv := l.(type) {
	case float64:
		rv, ok := r.(float64)
		if !ok {
			return undefined
		}
		cmp = compareFloat(lv, rv)
	case string:
		rv, ok := r.(string)
		if !ok {
			return undefined
		}
		cmp = strings.Compare(lv, rv)
	case bool:
		rv, ok := r.(bool)
		if !ok {
			return undefined
		}
		cmp = compareBool(lv, rv)
	default:
		return undefined
	}
	switch c.op {
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	}
	return cmp >= 0
}

func (c compareExpr) String() string {
	return "(" + c.l.String() + " " + c.op + " " + c.r.String() + ")"
}

type inExpr struct {
	e    expr
	list []expr
}

func (in inExpr) eval(doc map[string]any) any {
	v := in.e.eval(doc)
	if v == undefined {
		return undefined
	}
	for _, item := range in.list {
		if w := item.eval(doc); w != undefined && typeRank(v) == typeRank(w) && equal(v, w) {
			return true
		}
	}
	return false
}

func (in inExpr) String() string {
	parts := make([]string, len(in.list))
	for i, e := range in.list {
		parts[i] = e.String()
	}
	return "(" + in.e.String() + " IN (" + strings.Join(parts, ", ") + "))"
}

type callExpr struct {
	name string
	args []expr
}

func (c callExpr) eval(doc map[string]any) any {
	vals := make([]any, len(c.args))
	for i, a := range c.args {
		vals[i] = a.eval(doc)
	}
	switch c.name {
	case "IS_DEFINED":
		return vals[0] != undefined
	case "IS_NULL":
		return vals[0] == nil
	case "STARTSWITH", "ENDSWITH", "CONTAINS":
		s, ok1 := vals[0].(string)
		sub, ok2 := vals[1].(string)
		if !ok1 || !ok2 {
			return undefined
		}
		if len(vals) == 3 {
			ignoreCase, ok := vals[2].(bool)
			if !ok {
				return undefined
			}
			if ignoreCase {
				s, sub = strings.ToLower(s), strings.ToLower(sub)
			}
		}
		switch c.name {
		case "STARTSWITH":
			return strings.HasPrefix(s, sub)
		case "ENDSWITH":
			return strings.HasSuffix(s, sub)
		}
		return strings.Contains(s, sub)
	case "ARRAY_CONTAINS":
		arr, ok := vals[0].([]any)
		if !ok {
			return undefined
		}
		partial := false
		if len(vals) == 3 {
			if partial, ok = vals[2].(bool); !ok {
				return undefined
			}
		}
		for _, e := range arr {
			e = normalize(e)
			if equal(e, vals[1]) || (partial && partialMatch(e, vals[1])) {
				return true
			}
		}
		return false
	}
	return undefined
}

func (c callExpr) String() string {
	parts := make([]string, len(c.args))
	for i, a := range c.args {
		parts[i] = a.String()
	}
	return c.name + "(" + strings.Join(parts, ", ") + ")"
}

// countExpr is COUNT(e); evalAggregate supplies its value.
type countExpr struct{ e expr }

func (c countExpr) eval(doc map[string]any) any {
	if v, ok := doc[countKey]; ok {
		return v
	}
	return undefined
}

func (c countExpr) String() string { return "COUNT(" + c.e.String() + ")" }

// countKey carries the aggregate's value into the evaluation of the
// selection around it (no document property can hold this name's value
// during an aggregate's evaluation: the document there is synthetic).
const countKey = "\x00count"

func partialMatch(elem, want any) bool {
	w, ok := want.(map[string]any)
	if !ok {
		return false
	}
	e, ok := elem.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range w {
		if ev, ok := e[k]; !ok || !equal(normalize(ev), v) {
			return false
		}
	}
	return true
}

func isBool(v any) bool { _, ok := v.(bool); return ok }

func equal(a, b any) bool { return reflect.DeepEqual(normalize(a), normalize(b)) }

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// typeRank orders values of different types as ORDER BY does.
func typeRank(v any) int {
	switch v.(type) {
	case undefinedType:
		return 0
	case nil:
		return 1
	case bool:
		return 2
	case float64:
		return 3
	case string:
		return 4
	case []any:
		return 5
	}
	return 6
}

// compareValues orders two values: by type rank, then by value.
func compareValues(a, b any) int {
	ra, rb := typeRank(a), typeRank(b)
	if ra != rb {
		return ra - rb
	}
	switch x := a.(type) {
	case bool:
		return compareBool(x, b.(bool))
	case float64:
		return compareFloat(x, b.(float64))
	case string:
		return strings.Compare(x, b.(string))
	}
	return 0
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

// Ordered reports whether the query has an ORDER BY.
func (q *Query) Ordered() bool { return q.orderBy != nil }

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

// Sort orders matching items by the ORDER BY path, keeping the given order
// among equal values.
func (q *Query) Sort(docs []map[string]any) {
	sort.SliceStable(docs, func(i, j int) bool { return q.Compare(docs[i], docs[j]) < 0 })
}

// Top is the TOP count, or -1 without TOP.
func (q *Query) Top() int { return q.top }
