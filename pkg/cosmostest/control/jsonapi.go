package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// A small kit for a JSON API: handlers return a status and a reply or an
// error, bodies are decoded strictly, and every error is a JSON errorBody.

// maxBody bounds the bytes of a request body.
const maxBody = 1 << 20

// apiError is an answer other than success.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

func notFound(format string, a ...any) error {
	return &apiError{http.StatusNotFound, fmt.Sprintf(format, a...)}
}

func conflict(format string, a ...any) error {
	return &apiError{http.StatusConflict, fmt.Sprintf(format, a...)}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the reply failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// jsonHandler adapts a handler that returns a status and a reply, or an
// error (an apiError for its status, anything else 500).
func jsonHandler(h func(r *http.Request) (int, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status, body, err := h(r)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				ae = &apiError{http.StatusInternalServerError, err.Error()}
			}
			writeJSON(w, ae.status, errorBody{ae.msg})
			return
		}
		writeJSON(w, status, body)
	}
}

// decodeBody reads one JSON object into v; unknown fields are refused, so a
// misspelt field is an error rather than a silent default.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		return badRequest("the request body must hold exactly one JSON object")
	}
	return nil
}

func bodyError(err error) error {
	var (
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		tooLong *http.MaxBytesError
	)
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("the request body is empty; send a JSON object")
	case errors.As(err, &tooLong):
		return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body exceeds %d bytes", maxBody)}
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("the request body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("the request body must be a JSON object, not a JSON %s", typ.Value)
		}
		return badRequest("%s must be %s, not a JSON %s", typ.Field, jsonKind(typ.Type), typ.Value)
	}
	return badRequest("%s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	}
	return "a " + t.Kind().String()
}

// unmatched answers a request no route matched in JSON, keeping the mux's
// status (404 or 405) and Allow header.
func unmatched(w http.ResponseWriter, r *http.Request, muxAnswer http.Handler) {
	probe := &statusRecorder{ResponseWriter: discardResponse{header: http.Header{}}}
	muxAnswer.ServeHTTP(probe, r)
	if allow := probe.Header().Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	msg := "no control endpoint " + r.URL.EscapedPath()
	if probe.status == http.StatusMethodNotAllowed {
		msg = r.Method + " is not allowed on " + r.URL.EscapedPath()
	}
	writeJSON(w, probe.statusCode(), errorBody{msg})
}

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) statusCode() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header         { return d.header }
func (d discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d discardResponse) WriteHeader(int)             {}
