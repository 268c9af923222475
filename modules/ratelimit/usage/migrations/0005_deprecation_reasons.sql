-- The @deprecated reason of each coordinate an operation reads, as the schema of the gateway that last wrote the
-- operation's record said it (docs/design.md D77): NULL when that schema did not mark it deprecated. Written with
-- the coordinates, and updated when a later record of the same operation says otherwise (a schema reload that
-- deprecates a coordinate, changes a reason or removes a deprecation).
ALTER TABLE civicgate.operation_coordinates ADD COLUMN deprecated_reason text;
CREATE INDEX operation_coordinates_deprecated ON civicgate.operation_coordinates (op_hash) WHERE deprecated_reason IS NOT NULL;
