package cosmossql

import (
	"strconv"
	"strings"
	"unicode"
)

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
