// Package podresourcestest serves the kubelet's PodResources v1 API on a
// unix socket, the way the kubelet does, for tests: the same seam the
// device-plugin tests use, so that the agent's client speaks the real
// protocol over a real socket.
package podresourcestest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Server is a kubelet's pod-resources service with a settable answer.
type Server struct {
	podresourcesv1.UnimplementedPodResourcesListerServer

	// Socket is the path it listens on.
	Socket string

	mu    sync.Mutex
	pods  []*podresourcesv1.PodResources
	hang  bool
	noGet bool
	lists int
}

// Start serves on a socket in a new temporary directory until the test
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{Socket: filepath.Join(t.TempDir(), "kubelet.sock")}
	l, err := net.Listen("unix", s.Socket)
	if err != nil {
		t.Fatalf("listening on %s: %v", s.Socket, err)
	}
	g := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(g, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(l)
	}()
	t.Cleanup(func() {
		g.Stop()
		<-done
	})
	return s
}

// SetPods sets the pods List and Get answer with.
func (s *Server) SetPods(pods ...*podresourcesv1.PodResources) {
	s.mu.Lock()
	s.pods = pods
	s.mu.Unlock()
}

// Hang makes every call wait until its caller gives up, as a wedged
// kubelet does.
func (s *Server) Hang() {
	s.mu.Lock()
	s.hang = true
	s.mu.Unlock()
}

// WithoutGet answers Get as a kubelet with the KubeletPodResourcesGet
// feature gate off does.
func (s *Server) WithoutGet() {
	s.mu.Lock()
	s.noGet = true
	s.mu.Unlock()
}

// Lists is how many List calls were served.
func (s *Server) Lists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

func (s *Server) wait(ctx context.Context) error {
	s.mu.Lock()
	hang := s.hang
	s.mu.Unlock()
	if hang {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	return nil
}

// List answers with every pod.
func (s *Server) List(ctx context.Context, _ *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	return &podresourcesv1.ListPodResourcesResponse{PodResources: s.pods}, nil
}

// Get answers with one pod or, as the kubelet does, plain errors (gRPC
// code Unknown) for a pod it does not have and (WithoutGet) a feature
// gate that is off.
func (s *Server) Get(ctx context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noGet {
		return nil, errors.New("PodResources API Get method disabled") // the kubelet's words

	}
	for _, p := range s.pods {
		if p.GetNamespace() == req.GetPodNamespace() && p.GetName() == req.GetPodName() {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: p}, nil
		}
	}
	return nil, fmt.Errorf("pod %s in namespace %s not found", req.GetPodName(), req.GetPodNamespace())
}

// Pod is a pod whose one container holds ids of resource.
func Pod(namespace, name, resource string, ids ...string) *podresourcesv1.PodResources {
	return &podresourcesv1.PodResources{Namespace: namespace, Name: name, Containers: []*podresourcesv1.ContainerResources{{
		Name:    "main",
		Devices: []*podresourcesv1.ContainerDevices{{ResourceName: resource, DeviceIds: ids}},
	}}}
}
