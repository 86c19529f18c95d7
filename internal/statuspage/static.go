package statuspage

import (
	"embed"
	"net/http"
	"path"
)

// The page is plain HTML, CSS and JavaScript compiled into the binary: the
// cluster may have no internet access, so nothing comes from a CDN.
//
//go:embed static
var staticFiles embed.FS

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
}

// contentSecurityPolicy allows only this page's own files and requests:
// node names and condition messages come from the cluster, and should one
// ever reach the DOM unescaped it still could not run a script or load
// anything from elsewhere.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveStatic writes the embedded file at p ("" is the page) and reports
// whether there was one.
func serveStatic(w http.ResponseWriter, p string) bool {
	if p == "" {
		p = "index.html"
	}
	ctype, ok := contentTypes[path.Ext(p)]
	if !ok || path.Clean(p) != p || path.Dir(p) != "." {
		return false
	}
	b, err := staticFiles.ReadFile("static/" + p)
	if err != nil {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	// An upgraded controller serves a new page at the same URLs.
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
	return true
}
