//go:build integration

package dynamo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/gpuheal/gpuheal/internal/procs"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// installHint tells a person how to get dynalite.
const installHint = "install it with ./hack/ensure-dynalite.sh (npm, into hack/tools/dynalite)"

// dynaliteBin finds dynalite: $GPUHEAL_DYNALITE, else the repo-local
// install of hack/ensure-dynalite.sh.
func dynaliteBin() (string, error) {
	if v := os.Getenv("GPUHEAL_DYNALITE"); v != "" {
		if _, err := os.Stat(v); err != nil {
			return "", fmt.Errorf("dynalite not found at $GPUHEAL_DYNALITE: %w", err)
		}
		return v, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "ensure-dynalite.sh")); err == nil {
			bin := filepath.Join(dir, "hack", "tools", "dynalite", "node_modules", ".bin", "dynalite")
			if _, err := os.Stat(bin); err != nil {
				return "", fmt.Errorf("dynalite not found at %s", bin)
			}
			return bin, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no hack/ensure-dynalite.sh above the working directory")
		}
		dir = parent
	}
}

// forTest starts dynalite on a free loopback port for t and returns a
// client for it; dynalite is killed when t ends. Without dynalite it fails
// under CI=true and skips elsewhere, saying how to install it.
func forTest(t testing.TB) *dynamodb.Client {
	t.Helper()
	bin, err := dynaliteBin()
	if err != nil {
		if testproc.InCI() {
			t.Fatalf("%v: %s", err, installHint)
		}
		t.Skipf("skipping: %v: %s", err, installHint)
	}
	port := testproc.FreePort(t)
	// Killed at cleanup, and with the test binary when cleanup cannot run.
	testproc.StartCommand(t, procs.Command{Name: "dynalite", Path: bin, Args: []string{"--host", "127.0.0.1",
		"--port", fmt.Sprint(port), "--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}})
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(fmt.Sprintf("http://127.0.0.1:%d", port)),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDGPUHEALTEST", "secret", ""),
	})
	testproc.Eventually(t, 20*time.Second, fmt.Sprintf("dynalite answering on port %d", port), func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
		return err == nil, err
	})
	return client
}
