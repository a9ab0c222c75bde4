package payload

// IndexedArchive is an Archive known only by its class index (a baked
// deep verdict's): the classes with the CRC and size their directory
// recorded, and no bytes. Class and File fail on it; the linkage model
// asks the index for its classes instead.
func IndexedArchive(path string, classes map[string]ClassEntry) *Archive {
	return &Archive{Path: path, Classes: classes}
}
