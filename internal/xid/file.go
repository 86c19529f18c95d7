package xid

import (
	"fmt"
	"os"
)

// LoadFile returns the default catalog with the overrides of the YAML file
// at path applied (see ParseOverrides); an empty path means no overrides.
// Errors name the file.
func LoadFile(path string) (Catalog, error) {
	cat := Default()
	if path == "" {
		return cat, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cat, fmt.Errorf("reading Xid overrides: %w", err)
	}
	ov, err := ParseOverrides(data)
	if err != nil {
		return cat, fmt.Errorf("overrides of the Xid catalog in %s: %w", path, err)
	}
	if cat, err = cat.WithOverrides(ov); err != nil {
		return cat, fmt.Errorf("overrides of the Xid catalog in %s: %w", path, err)
	}
	return cat, nil
}
