package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/ray-go/ray/internal/base/identity"
)

// cookieName is the session cookie the ?token= sign-in sets.
const cookieName = "ray_go_dashboard"

// cookieValue is the session cookie's value for a token: an HMAC of its secret under the
// dashboard's key (no copy of the token; a rotated token makes it stale).
func (d *Dashboard) cookieValue(tok identity.Token) string {
	m := hmac.New(sha256.New, d.key[:])
	m.Write(tok.Secret[:])
	return hex.EncodeToString(m.Sum(nil))
}

// authorize checks the request's token (Bearer, the cookie or ?token=) and answers the
// request itself when it does not pass, or when it signs in with ?token= (a redirect to
// the URL without it).
func (d *Dashboard) authorize(w http.ResponseWriter, r *http.Request) bool {
	if d.cfg.TokenFile == "" && d.cfg.Token == nil {
		return true
	}
	read := d.cfg.Token
	if read == nil {
		read = func() (identity.Token, error) { return identity.ReadTokenFile(d.cfg.TokenFile) }
	}
	tok, err := read()
	if err != nil {
		d.cfg.Logger.Error("dashboard: read the cluster's token", "err", err)
		http.Error(w, "the head cannot read the cluster's token file; see its log", http.StatusInternalServerError)
		return false
	}
	given := func(s string) bool {
		t, err := identity.ParseToken(s)
		return err == nil && tok.SecretEquals(t.Secret)
	}
	if c, err := r.Cookie(cookieName); err == nil && hmac.Equal([]byte(c.Value), []byte(d.cookieValue(tok))) {
		return true
	}
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if given(b) {
			return true
		}
		d.unauthorized(w, r, "the token sent was refused (was it rotated?)")
		return false
	}
	q := r.URL.Query()
	if q.Has("token") {
		if !given(q.Get("token")) {
			d.unauthorized(w, r, "the token given was refused (was it rotated?)")
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: d.cookieValue(tok), Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}) // over HTTPS, never sent in clear
		q.Del("token")
		u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		if !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
			u.Path = "/" // never a redirect to another host ("//host/...")
		}
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	d.unauthorized(w, r, "no token was given")
	return false
}

// unauthorized answers 401 and says where the token is.
func (d *Dashboard) unauthorized(w http.ResponseWriter, r *http.Request, why string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="ray-go dashboard"`)
	http.Error(w, "401 Unauthorized: "+why+".\n\n"+
		"The ray-go dashboard shows the cluster to holders of its join token. On the head's machine, run\n\n"+
		"    rayctl token show\n\n"+
		"(it is also printed by `rayctl start --head`, and kept in <session-dir>/agent-<id>/ca/token), then open\n\n"+
		"    http://"+r.Host+"/?token=<TOKEN>\n\n"+
		"once: a cookie keeps this browser signed in until the token is rotated. Programs (a Prometheus scraping\n"+
		"/metrics) send the header `Authorization: Bearer <TOKEN>` instead.\n", http.StatusUnauthorized)
}

// label returns the value of a metric's label.
func label(pairs []*dto.LabelPair, name string) string {
	for _, p := range pairs {
		if p.GetName() == name {
			return p.GetValue()
		}
	}
	return ""
}
