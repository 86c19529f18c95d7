package podresources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultSocket is where the kubelet serves the PodResources API.
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// Limits of one call. The kubelet's own client caps answers at 16 MiB; a
// node of hundreds of pods answers in tens of KiB.
const (
	DefaultTimeout = 5 * time.Second
	MaxMessageSize = 16 << 20
)

// Lister answers like the kubelet's PodResources List: the Client, or a
// sim fleet's device manager.
type Lister interface {
	List(ctx context.Context) (*podresourcesv1.ListPodResourcesResponse, error)
}

// ErrNoSocket is returned (wrapped, with the path) when there is no
// pod-resources socket.
var ErrNoSocket = errors.New("no pod-resources socket")

// Client is a gRPC client of the kubelet's pod-resources socket. It
// connects on first use; gRPC dials again after the kubelet restarted.
type Client struct {
	socket  string
	timeout time.Duration

	mu   sync.Mutex
	conn *grpc.ClientConn
}

// NewClient returns a client of the socket at path; timeout bounds each
// call (0: DefaultTimeout).
func NewClient(path string, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{socket: path, timeout: timeout}
}

// List is the kubelet's List: every pod's devices.
func (c *Client) List(ctx context.Context) (*podresourcesv1.ListPodResourcesResponse, error) {
	api, err := c.api()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := api.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, c.callError("List", err)
	}
	return resp, nil
}

// Get is the kubelet's Get: one pod's devices. A kubelet without it (the
// KubeletPodResourcesGet feature gate off, or older than 1.27) is asked
// with List, and the pod picked from the answer; a pod in neither is an
// error that wraps os.ErrNotExist.
func (c *Client) Get(ctx context.Context, namespace, name string) (*podresourcesv1.PodResources, error) {
	api, err := c.api()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := api.Get(cctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: namespace, PodName: name})
	if err == nil {
		return resp.GetPodResources(), nil
	}
	if !getUnavailable(err) {
		return nil, c.callError("Get", err)
	}
	all, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range all.GetPodResources() {
		if p.GetNamespace() == namespace && p.GetName() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s: not in the kubelet's pod resources at %s: %w", namespace, name, c.socket, os.ErrNotExist)
}

// getUnavailable says the kubelet does not serve Get: Unimplemented from
// one that predates it, or the error of one whose feature gate is off
// (pkg/kubelet/apis/podresources/server_v1.go answers "PodResources API
// Get method disabled", code Unknown).
func getUnavailable(err error) bool {
	s, _ := status.FromError(err)
	return s.Code() == codes.Unimplemented || strings.Contains(s.Message(), "Get method disabled")
}

// callError wraps a failed call with the socket and what went wrong.
func (c *Client) callError(method string, err error) error {
	if status.Code(err) == codes.DeadlineExceeded {
		return fmt.Errorf("pod-resources %s at %s: no answer within %v", method, c.socket, c.timeout)
	}
	return fmt.Errorf("pod-resources %s at %s: %w", method, c.socket, err)
}

// api returns the connection's client, connecting when there is none.
func (c *Client) api() (podresourcesv1.PodResourcesListerClient, error) {
	if c.socket == "" {
		return nil, fmt.Errorf("%w: the pod-resources socket is turned off (--pod-resources-socket \"\")", ErrNoSocket)
	}
	fi, err := os.Stat(c.socket)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrNoSocket, c.socket, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("%w at %s: it is a %s, not a socket", ErrNoSocket, c.socket, fi.Mode().Type())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		conn, err := grpc.NewClient("unix://"+c.socket,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize)))
		if err != nil {
			return nil, fmt.Errorf("pod-resources socket %s: %w", c.socket, err)
		}
		c.conn = conn
	}
	return podresourcesv1.NewPodResourcesListerClient(c.conn), nil
}

// Close closes the connection, if any.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}
