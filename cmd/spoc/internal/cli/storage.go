package cli

import (
	"path/filepath"
	"strconv"
	"strings"
)

// resolveStorageFlag resolves a --storage value given on the command line the
// same way in every verb that takes one (tune, study ls|show|export): a
// relative SQLite path (sqlite:PATH or a plain path) is relative to the
// current directory, as any path on a command line is, and is returned
// absolute so that no later step (config.Search.StorageIn places relative
// paths of the configuration file inside --out) moves it. Other URLs
// (postgres://…, sqlite:///…) are returned unchanged.
func resolveStorageFlag(storage string) (string, error) {
	path, ok := sqliteStoragePath(storage)
	if !ok || filepath.IsAbs(path) || strings.HasPrefix(strings.TrimPrefix(storage, "sqlite:"), "//") {
		return storage, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", usageErrorf("--storage %q: %w", storage, err)
	}
	if strings.HasPrefix(storage, "sqlite:") {
		return "sqlite:" + abs, nil
	}
	return abs, nil
}

// storageYAML writes a --storage value, resolved as resolveStorageFlag
// does, as the search.storage the file would hold.
func storageYAML(storage string) (string, error) {
	s, err := resolveStorageFlag(storage)
	if err != nil {
		return "", err
	}
	return strconv.Quote(s), nil
}
