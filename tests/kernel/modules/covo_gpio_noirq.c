// SPDX-License-Identifier: GPL-2.0
/*
 * covo_gpio_noirq: an 8-line GPIO chip with no interrupt support, like an I/O expander whose
 * INT pin is not wired (covo kernel suite, tests/kernel). Lines are named exp0..exp7.
 *
 * The level an input reads is the matching bit of the writable parameter
 * /sys/module/covo_gpio_noirq/parameters/levels; an output reads back what was driven.
 * Without .to_irq, the GPIO character device refuses edge detection on these lines.
 */
#include <linux/module.h>
#include <linux/gpio/driver.h>
#include <linux/platform_device.h>

static unsigned int levels = 0xA5;
module_param(levels, uint, 0644);
MODULE_PARM_DESC(levels, "input levels, bit N for line N");

static unsigned long out_mask; /* bit set: line is an output */
static unsigned long out_vals;

static const char *const names[8] = {
	"exp0", "exp1", "exp2", "exp3", "exp4", "exp5", "exp6", "exp7",
};

static int noirq_get_direction(struct gpio_chip *gc, unsigned int off)
{
	return test_bit(off, &out_mask) ? GPIO_LINE_DIRECTION_OUT : GPIO_LINE_DIRECTION_IN;
}

static int noirq_direction_input(struct gpio_chip *gc, unsigned int off)
{
	clear_bit(off, &out_mask);
	return 0;
}

static void noirq_set(struct gpio_chip *gc, unsigned int off, int val)
{
	assign_bit(off, &out_vals, val);
}

static int noirq_direction_output(struct gpio_chip *gc, unsigned int off, int val)
{
	noirq_set(gc, off, val);
	set_bit(off, &out_mask);
	return 0;
}

static int noirq_get(struct gpio_chip *gc, unsigned int off)
{
	if (test_bit(off, &out_mask))
		return test_bit(off, &out_vals);
	return !!(READ_ONCE(levels) & BIT(off));
}

static struct platform_device *pdev;
static struct gpio_chip chip = {
	.label = "covo-noirq",
	.owner = THIS_MODULE,
	.base = -1,
	.ngpio = 8,
	.names = names,
	.can_sleep = false,
	.get_direction = noirq_get_direction,
	.direction_input = noirq_direction_input,
	.direction_output = noirq_direction_output,
	.get = noirq_get,
	.set = noirq_set,
};

static int __init noirq_init(void)
{
	int ret;

	pdev = platform_device_register_simple("covo-gpio-noirq", -1, NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	chip.parent = &pdev->dev;
	ret = gpiochip_add_data(&chip, NULL);
	if (ret)
		platform_device_unregister(pdev);
	return ret;
}

static void __exit noirq_exit(void)
{
	gpiochip_remove(&chip);
	platform_device_unregister(pdev);
}

module_init(noirq_init);
module_exit(noirq_exit);
MODULE_DESCRIPTION("GPIO chip without interrupts (covo kernel suite)");
MODULE_LICENSE("GPL");
