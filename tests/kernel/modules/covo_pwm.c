// SPDX-License-Identifier: GPL-2.0
/*
 * covo_pwm: a two-channel PWM chip that accepts any state, for covo's kernel suite
 * (tests/kernel). It appears as /sys/class/pwm/pwmchipN; what the PWM core last applied to
 * each channel is also in debugfs, independently of the sysfs attributes:
 *   /sys/kernel/debug/covo_pwm/{period0,duty0,enabled0,applies0,...1}
 */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pwm.h>
#include <linux/debugfs.h>

#define NPWM 2

static struct platform_device *pdev;
static struct dentry *dbg;
static u64 period[NPWM], duty[NPWM];
static u32 enabled[NPWM], applies[NPWM];

static int covo_pwm_apply(struct pwm_chip *chip, struct pwm_device *pwm,
			  const struct pwm_state *state)
{
	unsigned int i = pwm->hwpwm;

	period[i] = state->period;
	duty[i] = state->duty_cycle;
	enabled[i] = state->enabled;
	applies[i]++;
	return 0;
}

static int covo_pwm_get_state(struct pwm_chip *chip, struct pwm_device *pwm,
			      struct pwm_state *state)
{
	unsigned int i = pwm->hwpwm;

	state->period = period[i];
	state->duty_cycle = duty[i];
	state->enabled = enabled[i];
	state->polarity = PWM_POLARITY_NORMAL;
	return 0;
}

static const struct pwm_ops covo_pwm_ops = {
	.apply = covo_pwm_apply,
	.get_state = covo_pwm_get_state,
	.owner = THIS_MODULE,
};

static struct pwm_chip chip = {
	.ops = &covo_pwm_ops,
	.npwm = NPWM,
};

static int __init covo_pwm_init(void)
{
	char name[16];
	int i, ret;

	pdev = platform_device_register_simple("covo-pwm", -1, NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	chip.dev = &pdev->dev;
	ret = pwmchip_add(&chip);
	if (ret) {
		platform_device_unregister(pdev);
		return ret;
	}
	dbg = debugfs_create_dir("covo_pwm", NULL);
	for (i = 0; i < NPWM; i++) {
		snprintf(name, sizeof(name), "period%d", i);
		debugfs_create_u64(name, 0444, dbg, &period[i]);
		snprintf(name, sizeof(name), "duty%d", i);
		debugfs_create_u64(name, 0444, dbg, &duty[i]);
		snprintf(name, sizeof(name), "enabled%d", i);
		debugfs_create_u32(name, 0444, dbg, &enabled[i]);
		snprintf(name, sizeof(name), "applies%d", i);
		debugfs_create_u32(name, 0444, dbg, &applies[i]);
	}
	return 0;
}

static void __exit covo_pwm_exit(void)
{
	debugfs_remove_recursive(dbg);
	pwmchip_remove(&chip);
	platform_device_unregister(pdev);
}

module_init(covo_pwm_init);
module_exit(covo_pwm_exit);
MODULE_DESCRIPTION("PWM chip that records what it is set to (covo kernel suite)");
MODULE_LICENSE("GPL");
