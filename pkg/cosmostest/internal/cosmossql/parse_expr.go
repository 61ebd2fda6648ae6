package cosmossql

import (
	"strconv"
	"strings"
)

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
