// Package docs holds tidegate's documentation: the reactor's design, the
// proxy's configuration reference, operating tidegate, running several
// proxies, the push and TLV servers, and benchmarking. Its tests hold the
// configuration reference to the configuration's types. The package has no
// code.
package docs
