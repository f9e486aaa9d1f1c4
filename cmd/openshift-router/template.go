package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openshift-router-go/router/templates"
)

func newTemplateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "template",
		Short: "Work with the router's template",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:           "default",
		Short:         "Print the embedded default template (start a custom template from it)",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := fmt.Fprint(cmd.OutOrStdout(), templates.Default()); err != nil {
				return fmt.Errorf("writing the template: %w", err)
			}
			return nil
		},
	})
	return cmd
}
