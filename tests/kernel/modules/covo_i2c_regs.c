// SPDX-License-Identifier: GPL-2.0
/*
 * covo_i2c_regs: an I2C adapter with a real master_xfer (I2C_FUNC_I2C) whose bus holds
 * register-file chips, for covo's kernel suite (tests/kernel).
 *
 * Each chip has 256 8-bit registers and a register pointer. A write message sets the pointer
 * from its first byte and stores the bytes after it (the pointer advances); a read message
 * returns bytes from the pointer. A message to an address with no chip fails the transfer
 * with -ENXIO, the documented "no ACK" (Documentation/i2c/fault-codes.rst).
 *
 * What the bus saw is visible independently of any I2C client, in debugfs:
 *   /sys/kernel/debug/covo_i2c_regs/0xNN/regs            the 256 registers (binary)
 *   /sys/kernel/debug/covo_i2c_regs/0xNN/data_writes     bytes stored after a pointer byte
 *   /sys/kernel/debug/covo_i2c_regs/0xNN/pointer_writes  write messages (each sets the pointer)
 *   /sys/kernel/debug/covo_i2c_regs/0xNN/read_bytes      bytes read
 * so "a read tool wrote nothing" is data_writes unchanged.
 *
 * Parameter chips=0x76,0x40,... (default 0x76,0x40,0x48). A chip at 0x76 starts as a BME280
 * (id 0x60) holding the datasheet's example calibration and raw readings.
 */
#include <linux/module.h>
#include <linux/i2c.h>
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/mutex.h>

#define MAX_CHIPS 8

static unsigned short chips[MAX_CHIPS] = { 0x76, 0x40, 0x48 };
static int nchips = 3;
module_param_array(chips, ushort, &nchips, 0444);
MODULE_PARM_DESC(chips, "7-bit addresses of the register-file chips");

struct regchip {
	u16 addr;
	u8 regs[256];
	u8 ptr;
	u32 data_writes;
	u32 pointer_writes;
	u32 read_bytes;
	struct debugfs_blob_wrapper blob;
};

static struct regchip *regchips;
static DEFINE_MUTEX(bus_lock);
static struct dentry *dbg_root;

/* BME280 (BST-BME280-DS002): calibration from the datasheet's worked example (T and P),
 * humidity calibration H1..H6 = 75, 362, 0, 313, 50, 30; raw adc_P 415148, adc_T 519888,
 * adc_H 28004. */
static const u8 bme_calib_pt[26] = {
	0x70, 0x6B, 0x43, 0x67, 0x18, 0xFC, 0x7D, 0x8E, 0x43, 0xD6, 0xD0, 0x0B,
	0x27, 0x0B, 0x8C, 0x00, 0xF9, 0xFF, 0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17,
	0x00, 0x4B,
};
static const u8 bme_calib_h[7] = { 0x6A, 0x01, 0x00, 0x13, 0x29, 0x03, 0x1E };
static const u8 bme_data[8] = { 0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00, 0x6D, 0x64 };

static void preload(struct regchip *c)
{
	if (c->addr != 0x76)
		return;
	c->regs[0xD0] = 0x60;
	memcpy(&c->regs[0x88], bme_calib_pt, sizeof(bme_calib_pt));
	memcpy(&c->regs[0xE1], bme_calib_h, sizeof(bme_calib_h));
	memcpy(&c->regs[0xF7], bme_data, sizeof(bme_data));
}

static struct regchip *find(u16 addr)
{
	int i;

	for (i = 0; i < nchips; i++)
		if (regchips[i].addr == addr)
			return &regchips[i];
	return NULL;
}

static int regs_xfer(struct i2c_adapter *adap, struct i2c_msg *msgs, int num)
{
	int i, j;

	mutex_lock(&bus_lock);
	for (i = 0; i < num; i++) {
		struct i2c_msg *m = &msgs[i];
		struct regchip *c = find(m->addr);

		if (!c || (m->flags & I2C_M_TEN)) {
			mutex_unlock(&bus_lock);
			return -ENXIO;
		}
		if (m->flags & I2C_M_RD) {
			for (j = 0; j < m->len; j++)
				m->buf[j] = c->regs[c->ptr++];
			c->read_bytes += m->len;
		} else if (m->len > 0) {
			c->ptr = m->buf[0];
			c->pointer_writes++;
			for (j = 1; j < m->len; j++)
				c->regs[c->ptr++] = m->buf[j];
			c->data_writes += m->len - 1;
		}
	}
	mutex_unlock(&bus_lock);
	return num;
}

static u32 regs_func(struct i2c_adapter *adap)
{
	return I2C_FUNC_I2C | I2C_FUNC_SMBUS_EMUL;
}

static const struct i2c_algorithm regs_algo = {
	.master_xfer = regs_xfer,
	.functionality = regs_func,
};

static struct i2c_adapter adapter = {
	.owner = THIS_MODULE,
	.class = I2C_CLASS_HWMON,
	.algo = &regs_algo,
	.name = "covo register-file bus",
};

static int __init regs_init(void)
{
	int i, ret;
	char name[8];

	if (nchips < 1 || nchips > MAX_CHIPS)
		return -EINVAL;
	regchips = kcalloc(nchips, sizeof(*regchips), GFP_KERNEL);
	if (!regchips)
		return -ENOMEM;
	dbg_root = debugfs_create_dir("covo_i2c_regs", NULL);
	for (i = 0; i < nchips; i++) {
		struct regchip *c = &regchips[i];
		struct dentry *d;

		if (chips[i] < 0x03 || chips[i] > 0x77) {
			ret = -EINVAL;
			goto fail;
		}
		c->addr = chips[i];
		preload(c);
		c->blob.data = c->regs;
		c->blob.size = sizeof(c->regs);
		snprintf(name, sizeof(name), "0x%02x", c->addr);
		d = debugfs_create_dir(name, dbg_root);
		debugfs_create_blob("regs", 0444, d, &c->blob);
		debugfs_create_u32("data_writes", 0444, d, &c->data_writes);
		debugfs_create_u32("pointer_writes", 0444, d, &c->pointer_writes);
		debugfs_create_u32("read_bytes", 0444, d, &c->read_bytes);
	}
	ret = i2c_add_adapter(&adapter);
	if (ret)
		goto fail;
	pr_info("covo_i2c_regs: adapter i2c-%d with %d chips\n", adapter.nr, nchips);
	return 0;
fail:
	debugfs_remove_recursive(dbg_root);
	kfree(regchips);
	return ret;
}

static void __exit regs_exit(void)
{
	i2c_del_adapter(&adapter);
	debugfs_remove_recursive(dbg_root);
	kfree(regchips);
}

module_init(regs_init);
module_exit(regs_exit);
MODULE_DESCRIPTION("I2C adapter with register-file chips (covo kernel suite)");
MODULE_LICENSE("GPL");
