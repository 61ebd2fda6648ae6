package cosmostest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// The query endpoint understands a deliberately small SQL subset:
//
//	SELECT * FROM <alias> [WHERE <cond>]      (or FROM <container> [AS] <alias>)
//	<cond> := <cond> OR <cond> | <cond> AND <cond> | ( <cond> )
//	        | STARTSWITH(<alias>.id, @param) | STARTSWITH(<alias>.id, 'literal')
//
// Keywords are case-insensitive; literals may use single or double quotes.
// Anything else is rejected with 400 BadRequest, so that a filter this
// server does not understand can never silently match everything.

type queryBody struct {
	Query      string           `json:"query"`
	Parameters []queryParameter `json:"parameters"`
}

type queryParameter struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// idPredicate is a compiled WHERE clause over an item id.
type idPredicate func(id string) bool

func (a *Account) queryReply(r *http.Request, dbID, collID string) *reply {
	if ct := headerValue(r.Header, "Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/query+json") {
		return badRequest("a query needs Content-Type application/query+json, got %q", ct)
	}
	body, rep := readBody(r)
	if rep != nil {
		return rep
	}
	var qb queryBody
	if err := json.Unmarshal(body, &qb); err != nil {
		return badRequest("the query body is not valid JSON: %v", err)
	}
	pred, err := compileQuery(qb.Query, qb.Parameters)
	if err != nil {
		return badRequest("%v", err)
	}
	pageSize, rep := maxItemCount(r)
	if rep != nil {
		return rep
	}
	after := ""
	if tok := headerValue(r.Header, hdrContinuation); tok != "" {
		after, err = decodeQueryContinuation(tok)
		if err != nil {
			return badRequest("invalid continuation token for this query")
		}
	}
	pkValue, hasPK, rep := partitionKeyHeader(r)
	if rep != nil {
		return rep
	}

	return a.inContainer(dbID, collID, func(c *Container) *reply {
		return a.queryLocked(r, c, pred, pageSize, after, pkValue, hasPK)
	})
}

func (a *Account) queryLocked(r *http.Request, c *Container, pred idPredicate, pageSize int, after string, pkValue any, hasPK bool) *reply {
	// Which items the query may see: one logical partition, one physical
	// range, or (cross-partition) all of them.
	inScope := func(*item) bool { return true }
	scopeRanges := c.ranges
	switch rangeID := headerValue(r.Header, keyPartitionKeyRangeID); {
	case hasPK:
		epk := epkOf(pkValue)
		inScope = func(it *item) bool { return it.epk == epk }
		scopeRanges = []*pkRange{c.rangeForEPKLocked(epk)}
	case rangeID != "":
		pr, ok := c.allRanges[rangeID]
		if !ok {
			return notFound("partition key range " + rangeID + " does not exist")
		}
		if pr.gone {
			return partitionGone(rangeID)
		}
		inScope = func(it *item) bool { return epkInRange(it.epk, pr.min, pr.max) }
		scopeRanges = []*pkRange{pr}
	case len(c.ranges) > 1 && !strings.EqualFold(r.Header.Get(hdrCrossPartition), "true"):
		return badRequest("Cross partition query is required but disabled. Please set %s = True, or specify the partition key", hdrCrossPartition)
	}

	var page []json.RawMessage
	lastID := ""
	more := false
	all := c.sortedItemsLocked()
	start := 0
	if after != "" {
		start = sort.Search(len(all), func(i int) bool { return all[i].id() > after })
	}
	for _, it := range all[start:] {
		id := it.id()
		if !inScope(it) || !pred(id) {
			continue
		}
		if len(page) == pageSize {
			more = true
			break
		}
		page = append(page, it.queryDocument())
		lastID = id
	}
	if page == nil {
		page = []json.RawMessage{}
	}
	out := documentsReply(chargeQuery, c.rid, page)
	if more {
		out.set(hdrContinuation, encodeQueryContinuation(lastID))
	}
	tokens := make([]string, len(scopeRanges))
	for i, pr := range scopeRanges {
		tokens[i] = a.sessionTokenLocked(pr)
	}
	out.set(hdrSessionToken, strings.Join(tokens, ","))
	out.set(hdrItemCount, strconv.Itoa(len(page)))
	return out
}

// Query continuations are opaque to clients; ours carry the last id
// returned, so paging stays stable while items are written.
func encodeQueryContinuation(lastID string) string {
	return base64.StdEncoding.EncodeToString([]byte("after:" + lastID))
}

func decodeQueryContinuation(tok string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(tok)
	if err != nil {
		return "", err
	}
	after, ok := strings.CutPrefix(string(b), "after:")
	if !ok || after == "" {
		return "", fmt.Errorf("not a continuation of this server")
	}
	return after, nil
}

// compileQuery parses the supported SQL subset into a predicate on item ids.
func compileQuery(query string, params []queryParameter) (idPredicate, error) {
	toks, err := lexQuery(query)
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	for _, p := range params {
		if !strings.HasPrefix(p.Name, "@") {
			return nil, fmt.Errorf("query parameter name %q must start with @", p.Name)
		}
		values[p.Name] = p.Value
	}
	p := &queryParser{toks: toks, params: values}
	pred, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("unsupported query %q: %w", query, err)
	}
	return pred, nil
}

type tokenKind int

const (
	tokIdent tokenKind = iota
	tokParam
	tokString
	tokSymbol
	tokEOF
)

type token struct {
	kind tokenKind
	text string // identifier, parameter name, symbol, or decoded string literal
}

func lexQuery(q string) ([]token, error) {
	var toks []token
	rs := []rune(q)
	for i := 0; i < len(rs); {
		ch := rs[i]
		switch {
		case unicode.IsSpace(ch):
			i++
		case ch == '(' || ch == ')' || ch == ',' || ch == '.' || ch == '*':
			toks = append(toks, token{tokSymbol, string(ch)})
			i++
		case ch == '\'' || ch == '"':
			s, n, err := lexString(rs[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokString, s})
			i += n
		case ch == '@' || ch == '_' || unicode.IsLetter(ch):
			j := i + 1
			for j < len(rs) && (rs[j] == '_' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			kind := tokIdent
			if ch == '@' {
				kind = tokParam
				if j == i+1 {
					return nil, fmt.Errorf("a parameter needs a name after @")
				}
			}
			toks = append(toks, token{kind, string(rs[i:j])})
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q in query", ch)
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
				return "", 0, fmt.Errorf("unterminated string literal")
			}
			i++
			switch rs[i] {
			case 'n':
				sb.WriteRune('\n')
			case 't':
				sb.WriteRune('\t')
			case '\\', '\'', '"', '/':
				sb.WriteRune(rs[i])
			default:
				return "", 0, fmt.Errorf("unsupported escape \\%c in string literal", rs[i])
			}
		default:
			sb.WriteRune(rs[i])
		}
	}
	return "", 0, fmt.Errorf("unterminated string literal")
}

type queryParser struct {
	toks   []token
	pos    int
	alias  string
	params map[string]any
}

func (p *queryParser) peek() token { return p.toks[p.pos] }

func (p *queryParser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

func (p *queryParser) keyword(kw string) bool {
	t := p.peek()
	if t.kind == tokIdent && strings.EqualFold(t.text, kw) {
		p.pos++
		return true
	}
	return false
}

func (p *queryParser) expectKeyword(kw string) error {
	if !p.keyword(kw) {
		return fmt.Errorf("expected %s, found %s", kw, describe(p.peek()))
	}
	return nil
}

func (p *queryParser) expectSymbol(sym string) error {
	t := p.next()
	if t.kind != tokSymbol || t.text != sym {
		return fmt.Errorf("expected %q, found %s", sym, describe(t))
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

var reservedWords = map[string]bool{"select": true, "from": true, "where": true, "and": true, "or": true, "not": true,
	"top": true, "value": true, "order": true, "by": true, "join": true, "in": true, "as": true}

func (p *queryParser) parse() (idPredicate, error) {
	if err := p.expectKeyword("SELECT"); err != nil {
		return nil, err
	}
	if err := p.expectSymbol("*"); err != nil {
		return nil, fmt.Errorf("only SELECT * is supported: %w", err)
	}
	if err := p.expectKeyword("FROM"); err != nil {
		return nil, err
	}
	alias := p.next()
	if alias.kind != tokIdent || reservedWords[strings.ToLower(alias.text)] {
		return nil, fmt.Errorf("expected a collection alias after FROM, found %s", describe(alias))
	}
	p.alias = alias.text
	// "FROM <container> [AS] <alias>" names the alias explicitly.
	p.keyword("AS")
	if t := p.peek(); t.kind == tokIdent && !reservedWords[strings.ToLower(t.text)] {
		p.alias = p.next().text
	}
	pred := idPredicate(func(string) bool { return true })
	if p.keyword("WHERE") {
		var err error
		if pred, err = p.parseOr(); err != nil {
			return nil, err
		}
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, fmt.Errorf("unexpected %s", describe(t))
	}
	return pred, nil
}

func (p *queryParser) parseOr() (idPredicate, error) {
	left, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		right, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l := left
		left = func(id string) bool { return l(id) || right(id) }
	}
	return left, nil
}

func (p *queryParser) parseAnd() (idPredicate, error) {
	left, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		right, err := p.parsePrimary()
		if err != nil {
			return nil, err
		}
		l := left
		left = func(id string) bool { return l(id) && right(id) }
	}
	return left, nil
}

func (p *queryParser) parsePrimary() (idPredicate, error) {
	if t := p.peek(); t.kind == tokSymbol && t.text == "(" {
		p.next()
		inner, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if err := p.expectSymbol(")"); err != nil {
			return nil, err
		}
		return inner, nil
	}
	if !p.keyword("STARTSWITH") {
		return nil, fmt.Errorf("only STARTSWITH(%s.id, …) conditions are supported, found %s", p.alias, describe(p.peek()))
	}
	if err := p.expectSymbol("("); err != nil {
		return nil, err
	}
	if t := p.next(); t.kind != tokIdent || t.text != p.alias {
		return nil, fmt.Errorf("STARTSWITH must test %s.id, found %s", p.alias, describe(t))
	}
	if err := p.expectSymbol("."); err != nil {
		return nil, err
	}
	if t := p.next(); t.kind != tokIdent || t.text != "id" {
		return nil, fmt.Errorf("STARTSWITH must test %s.id, found %s.%s", p.alias, p.alias, t.text)
	}
	if err := p.expectSymbol(","); err != nil {
		return nil, err
	}
	var prefix string
	switch t := p.next(); t.kind {
	case tokString:
		prefix = t.text
	case tokParam:
		v, ok := p.params[t.text]
		if !ok {
			return nil, fmt.Errorf("parameter %s is used but not supplied", t.text)
		}
		sv, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("parameter %s must be a string for STARTSWITH, got %T", t.text, v)
		}
		prefix = sv
	default:
		return nil, fmt.Errorf("STARTSWITH needs a string literal or parameter as prefix, found %s", describe(t))
	}
	if err := p.expectSymbol(")"); err != nil {
		return nil, fmt.Errorf("only the two-argument STARTSWITH is supported: %w", err)
	}
	return func(id string) bool { return strings.HasPrefix(id, prefix) }, nil
}
