package httpapi

// RootFamily exposes rootFamily to the external tests.
func RootFamily(field string) string {
	f, _ := rootFamily(field)
	return f
}
