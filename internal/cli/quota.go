package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/porch-pipelines/porch/quota"
	"github.com/porch-pipelines/porch/workflows"
)

func (a *app) quotaCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Set, list, show and lift core quotas per compute or VM size",
		Long: "A quota caps the cores the steps on a compute, or on computes of a VM size, use at once.\n" +
			"A step that fits waits in line (first come, first served) while the quota is in use; a step\n" +
			"that could never fit is refused when its pipeline is submitted.",
	}
	pool := func(args []string) (quota.Pool, error) {
		p, err := quota.ParsePool(args[0], args[1])
		if err != nil {
			return p, usageError("%v", err)
		}
		return p, nil
	}
	var cores int
	set := catalogCommand("set compute|size NAME --cores N", "Set the cores a compute or a VM size may use at once",
		exactArgs(2, "a kind (compute or size) and a name"),
		func(ctx context.Context, args []string, flags serverFlags) error {
			p, err := pool(args)
			if err != nil {
				return err
			}
			if cores < 1 {
				return usageError("quota set needs --cores N, at least 1")
			}
			return a.withCatalog(ctx, flags, func(ctx context.Context, sess *session) error {
				prev, err := workflows.SetQuota(ctx, sess.client, p, cores)
				if err != nil {
					return err
				}
				was := "was none"
				if prev > 0 {
					was = "was " + strconv.Itoa(prev)
				}
				fmt.Fprintf(a.stdout, "quota of %s set to %d cores (%s) on %s\n", p, cores, was, sess.settings.Address)
				return nil
			})
		})
	set.Flags().IntVar(&cores, "cores", 0, "the cores the pool may use at once")
	cmd.AddCommand(set,
		catalogCommand("list", "List the quotas set, with the cores in use and the jobs waiting", exactArgs(0, "no arguments"),
			func(ctx context.Context, _ []string, flags serverFlags) error {
				return a.withCatalog(ctx, flags, func(ctx context.Context, sess *session) error {
					qs, err := workflows.ListQuotas(ctx, sess.client)
					if err != nil {
						return err
					}
					if len(qs) == 0 {
						fmt.Fprintf(a.stdout, "no quotas set on %s: set one with `porch quota set compute|size NAME --cores N`\n",
							sess.settings.Address)
						return nil
					}
					var rows [][]string
					for _, q := range qs {
						rows = append(rows, []string{string(q.Pool.Kind), q.Pool.Name, strconv.Itoa(q.Cores),
							strconv.Itoa(q.InUse()), strconv.Itoa(len(q.Holders)), strconv.Itoa(len(q.Waiters))})
					}
					return a.printTable("KIND\tNAME\tCORES\tIN USE\tJOBS\tWAITING", rows)
				})
			}),
		catalogCommand("show compute|size NAME", "Show a quota: the jobs holding its cores and those waiting, in line",
			exactArgs(2, "a kind (compute or size) and a name"),
			func(ctx context.Context, args []string, flags serverFlags) error {
				p, err := pool(args)
				if err != nil {
					return err
				}
				return a.withCatalog(ctx, flags, func(ctx context.Context, sess *session) error {
					q, ok, err := workflows.GetQuota(ctx, sess.client, p)
					if err != nil {
						return err
					}
					if !ok {
						return fmt.Errorf("%s has no quota on %s: porch quota list shows the quotas set", p, sess.settings.Address)
					}
					fmt.Fprintf(a.stdout, "%s: %s\n", p, q.Describe())
					var rows [][]string
					// Holders first, then the line in its order.
					for i, c := range append(q.Holders, q.Waiters...) {
						state := "running"
						if i >= len(q.Holders) {
							state = "waiting"
						}
						rows = append(rows, []string{state, c.ID, strconv.Itoa(c.Cores), c.At.Local().Format("15:04:05")})
					}
					if len(rows) == 0 {
						return nil
					}
					return a.printTable("STATE\tSTEP\tCORES\tSINCE", rows)
				})
			}),
		catalogCommand("delete compute|size NAME", "Lift a quota: the jobs waiting for it start",
			exactArgs(2, "a kind (compute or size) and a name"),
			func(ctx context.Context, args []string, flags serverFlags) error {
				p, err := pool(args)
				if err != nil {
					return err
				}
				return a.withCatalog(ctx, flags, func(ctx context.Context, sess *session) error {
					if err := workflows.DeleteQuota(ctx, sess.client, p); err != nil {
						return err
					}
					fmt.Fprintf(a.stdout, "quota of %s lifted\n", p)
					return nil
				})
			}),
	)
	return cmd
}
