package k8srun

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/llmbench/llmbench/internal/redact"
)

// apiTimeout bounds each call to the API server (the kubeconfig's own timeout, when it sets
// one, is kept).
const apiTimeout = 30 * time.Second

// Cluster is a client for one kubeconfig context and the namespace a run goes to (client-go's
// dynamic client, see api.go).
type Cluster struct {
	dyn       dynamic.Interface
	http      *http.Client
	Namespace string
	Context   string
	Host      string
}

// Connect loads the kubeconfig (kubeconfig "" follows kubectl: $KUBECONFIG, else
// ~/.kube/config) and picks context ("" = its current context) and namespace ("" = the
// context's, else "default"). A kubeconfig without a current context, and a namespace that
// does not exist, are errors that say what to do.
func Connect(ctx context.Context, kubeconfig, kubeContext, namespace string) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	raw, err := cfg.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	where := kubeconfig
	if where == "" {
		where = "the kubeconfig ($KUBECONFIG or ~/.kube/config)"
	}
	name := kubeContext
	if name == "" {
		name = raw.CurrentContext
	}
	if name == "" {
		return nil, fmt.Errorf("%s has no current context: pick one with `kubectl config use-context NAME` or pass --context NAME", where)
	}
	if _, ok := raw.Contexts[name]; !ok {
		return nil, fmt.Errorf("%s has no context %q (`kubectl config get-contexts` lists them)", where, name)
	}
	rest, err := cfg.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	if namespace == "" {
		if namespace, _, err = cfg.Namespace(); err != nil {
			return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
		}
	}
	if rest.Timeout == 0 {
		// An API server that stops answering ends a call here rather than hang the run; an
		// interrupt (ctx) ends it at once.
		rest.Timeout = apiTimeout
	}
	c := &Cluster{Namespace: namespace, Context: name, Host: strings.TrimSuffix(rest.Host, "/")}
	if c.http, err = restclient.HTTPClientFor(rest); err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	if c.dyn, err = dynamic.NewForConfigAndClient(rest, c.http); err != nil {
		return nil, err
	}
	return c, c.checkNamespace(ctx)
}

// checkNamespace refuses a namespace that does not exist (a user who may not read
// namespaces gets no check: the first create says what is wrong).
func (c *Cluster) checkNamespace(ctx context.Context) error {
	_, err := c.dyn.Resource(namespaces).Get(ctx, c.Namespace, metav1.GetOptions{})
	switch {
	case err == nil, apierrors.IsForbidden(err):
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("namespace %q does not exist in context %q: create it (`kubectl create namespace %s`) or pass --namespace", c.Namespace, c.Context, c.Namespace)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		return fmt.Errorf("context %q (%s): %w", c.Context, redact.URL(c.Host), err)
	}
}
