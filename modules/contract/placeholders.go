package contract

// Placeholder names (without braces: repl.Set and repl.Get take them so; a
// Caddyfile or a default writes "{" + name + "}"). civic_auth publishes the
// civic.* ones on every authenticated request; graphql_guard publishes the
// graphql.* ones on every request it forwards (docs/design.md D2).
const (
	// CivicKeyID is the key's id (never the key): civic_rate_limit's default key.
	CivicKeyID = "civic.key_id"
	// CivicOrg is the key's organization id: civic_webhooks' default org.
	CivicOrg = "civic.org"
	// CivicTier is the key's tier name: civic_rate_limit's default policy name.
	CivicTier = "civic.tier"
	// CivicEnv is the key's environment, live or test: civic_webhooks' default env.
	CivicEnv = "civic.env"
	// CivicRate is the tier's rate list (ParseRates syntax, written by
	// Rates: "100/m" or "100/m,20000/d"): civic_rate_limit's default rate.
	CivicRate = "civic.rate"
	// CivicFamilies is the tier's families, comma-separated in configuration
	// order: graphql_guard's default entitlements and civic_webhooks' default
	// families.
	CivicFamilies = "civic.families"

	// GraphQLOperationName is the selected operation's name ("" if anonymous).
	GraphQLOperationName = "graphql.operation_name"
	// GraphQLOperationType is the selected operation's type: query,
	// mutation or subscription.
	GraphQLOperationType = "graphql.operation_type"
	// GraphQLRootFields is the root field names the operation reaches
	// (fragments expanded, aliases resolved), distinct, sorted, comma-separated.
	GraphQLRootFields = "graphql.root_fields"
	// GraphQLFamilies is the families the operation touches, sorted,
	// comma-separated.
	GraphQLFamilies = "graphql.families"
	// GraphQLCost is the operation's estimated cost (docs/design.md D12).
	GraphQLCost = "graphql.cost"
	// GraphQLDocumentHash is the hex SHA-256 of the document in normal form
	// (gqlparser's compact formatter: no comments, no insignificant white
	// space), the same for a text sent in full or resolved from a persisted
	// hash: a response cache's document key.
	GraphQLDocumentHash = "graphql.document_hash"
)
