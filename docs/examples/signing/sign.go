// Signed requests to payoutd with Go's standard library only.
//
// Makes a v1-signed GET of your subaccount, then a v2-signed POST that creates a receiver with an
// idempotency key, sent twice as a client retrying after a lost answer would: the second answer
// is the first one replayed (`idempotent-replayed: true`), never a second receiver.
// docs/API.md, "Authentication", is the reference.
//
//	PAYOUTD_URL=http://127.0.0.1:8080 PAYOUTD_API_KEY=pk_... PAYOUTD_API_SECRET=sk_... \
//	PAYOUTD_SUBACCOUNT=<subaccount id> go run sign.go
//
// Exits 0 when every answer was the expected one, 1 otherwise (saying which), 2 when a variable
// is missing.
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	nonceMu   sync.Mutex
	lastNonce int64
)

// nextNonce is Unix time in milliseconds, increasing within this process: POST nonces are
// single-use, so two requests in one millisecond still get their own.
func nextNonce() string {
	nonceMu.Lock()
	defer nonceMu.Unlock()
	now := time.Now().UnixMilli()
	if now <= lastNonce {
		now = lastNonce + 1
	}
	lastNonce = now
	return strconv.FormatInt(now, 10)
}

func hmacHex(secret, message string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(message))
	return hex.EncodeToString(mac.Sum(nil))
}

// SignV1 is the v1 `signature`: HMAC-SHA256 of `<nonce>.<api key>`.
func SignV1(apiKey, apiSecret, nonce string) string {
	return nonce + "." + hmacHex(apiSecret, nonce+"."+apiKey)
}

// SignV2 is the v2 `signature`: HMAC-SHA256 of `<nonce>.<api key>.<METHOD>.<path with
// query>.<hex SHA-256 of the raw body>`; send `x-signature-version: 2` with it.
func SignV2(apiKey, apiSecret, nonce, method, path string, body []byte) string {
	sum := sha256.Sum256(body)
	message := strings.Join([]string{nonce, apiKey, strings.ToUpper(method), path, hex.EncodeToString(sum[:])}, ".")
	return nonce + "." + hmacHex(apiSecret, message)
}

type answer struct {
	status   int
	replayed string
	body     map[string]any
}

// call sends one signed request; version is 1 or 2, idempotencyKey "" for none.
func call(base, apiKey, apiSecret, method, path string, body any, version int, idempotencyKey string) (answer, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return answer{}, err
		}
	}
	request, err := http.NewRequest(method, base+path, bytes.NewReader(raw))
	if err != nil {
		return answer{}, err
	}
	nonce := nextNonce()
	request.Header.Set("x-api-key", apiKey)
	if version == 1 {
		request.Header.Set("signature", SignV1(apiKey, apiSecret, nonce))
	} else {
		request.Header.Set("x-signature-version", "2")
		request.Header.Set("signature", SignV2(apiKey, apiSecret, nonce, method, path, raw))
	}
	if body != nil {
		request.Header.Set("content-type", "application/json")
	}
	if idempotencyKey != "" {
		request.Header.Set("idempotency-key", idempotencyKey)
	}
	client := http.Client{Timeout: 30 * time.Second}
	response, err := client.Do(request)
	if err != nil {
		return answer{}, err
	}
	defer response.Body.Close()
	text, err := io.ReadAll(io.LimitReader(response.Body, 1<<20))
	if err != nil {
		return answer{}, err
	}
	got := answer{status: response.StatusCode, replayed: response.Header.Get("idempotent-replayed")}
	_ = json.Unmarshal(text, &got.body) // nil when not JSON: a bare 400 from the HTTP parser, say
	return got, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func run() int {
	base := strings.TrimRight(os.Getenv("PAYOUTD_URL"), "/")
	if base == "" {
		base = "http://127.0.0.1:8080"
	}
	apiKey, apiSecret, subaccount := os.Getenv("PAYOUTD_API_KEY"), os.Getenv("PAYOUTD_API_SECRET"), os.Getenv("PAYOUTD_SUBACCOUNT")
	for name, value := range map[string]string{"PAYOUTD_API_KEY": apiKey, "PAYOUTD_API_SECRET": apiSecret, "PAYOUTD_SUBACCOUNT": subaccount} {
		if value == "" {
			fmt.Fprintf(os.Stderr, "set %s (see the top of this file)\n", name)
			return 2
		}
	}

	got, err := call(base, apiKey, apiSecret, "GET", "/api/subaccount/"+subaccount, nil, 1, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("GET /api/subaccount/%s (v1): %d\n", subaccount, got.status)
	if got.status != 200 {
		fmt.Fprintf(os.Stderr, "unexpected answer: %v\n", got.body)
		return 1
	}

	receiver := map[string]string{
		"subaccount_id": subaccount,
		"first_name":    "Ada",
		"last_name":     "Lovelace",
		"email":         "ada." + randomHex(6) + "@example.com",
		"dob":           "1990-12-10",
		"dialcode":      "61",
		"phone":         "412345678",
		"address":       "1 Example Street",
		"city":          "Sydney",
		"state":         "NSW",
		"postcode":      "2000",
		"country":       "AUS",
	}
	key := randomHex(16)
	var answers [2]answer
	for i, label := range []string{"first", "retry"} {
		// The retry is the same request with the same key (a new nonce and signature, as every
		// POST needs).
		if answers[i], err = call(base, apiKey, apiSecret, "POST", "/api/receiver", receiver, 2, key); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		replayed := answers[i].replayed
		if replayed == "" {
			replayed = "false"
		}
		fmt.Printf("POST /api/receiver (v2, %s): %d, idempotent-replayed: %s\n", label, answers[i].status, replayed)
		if answers[i].status != 200 {
			fmt.Fprintf(os.Stderr, "unexpected answer: %v\n", answers[i].body)
			return 1
		}
	}
	ids := [2]any{}
	for i := range answers {
		if payload, ok := answers[i].body["payload"].(map[string]any); ok {
			ids[i] = payload["receiver_id"]
		}
	}
	if ids[0] == nil || ids[0] != ids[1] || answers[1].replayed != "true" {
		fmt.Fprintf(os.Stderr, "the retry was not the first answer replayed: %v\n", ids)
		return 1
	}
	fmt.Printf("receiver_id: %v\n", ids[0])
	return 0
}

func main() {
	os.Exit(run())
}
