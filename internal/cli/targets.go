package cli

import _ "github.com/rlctl/rlctl/internal/target/all" // every target kind a scenario may name
