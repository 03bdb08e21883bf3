package s3client

import (
	"errors"
	"os"

	"github.com/weir-etl/weir/connector"
)

// Check reports, before Open, what the connection options name that the
// environment lacks: a variable access_key_id_env, secret_access_key_env or
// session_token_env names that is unset or empty. It connects to nothing.
func (c *Conn) Check() error {
	var errs []error
	for _, v := range []struct{ field, name string }{
		{"access_key_id_env", c.AccessKeyIDEnv}, {"secret_access_key_env", c.SecretAccessKeyEnv}, {"session_token_env", c.SessionTokenEnv},
	} {
		if v.name != "" && os.Getenv(v.name) == "" {
			errs = append(errs, connector.Fieldf(v.field, "names %s, which is unset or empty: set it, or remove the option to use the AWS default credential chain", v.name))
		}
	}
	return errors.Join(errs...)
}
