package store

import "github.com/civicgate/civicgate/backend/cursor"

// bindingOf binds cursors to a family and its normalised filter struct (nil members omitted).
func bindingOf(family string, filter any) string { return cursor.Binding(family, filter) }
