package main

import bounded "github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"

// excerpt echoes a user-supplied value in a message, bounded (internal/excerpt).
func excerpt(value string) string { return bounded.Of(value) }
