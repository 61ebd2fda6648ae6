package cosmossql

import (
	"encoding/json"
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
