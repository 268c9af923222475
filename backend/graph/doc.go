// Package graph is recordsd's gqlgen executable schema (generated.go, from ../schema/records.graphqls via
// ../gqlgen.yml) and its resolvers, which delegate to backend/store.
package graph

//go:generate sh -c "cd .. && go tool gqlgen generate --config gqlgen.yml"
//go:generate sed -i.orig -e "s/graphql\\.MarshalSliceConcurrently(/marshalSliceInOrder(/g" generated.go
//go:generate rm generated.go.orig
