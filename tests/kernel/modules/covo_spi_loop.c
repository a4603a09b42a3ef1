// SPDX-License-Identifier: GPL-2.0
/*
 * covo_spi_loop: an SPI controller (bus 0) with one device at chip select 0 whose MISO answers
 * each byte of MOSI inverted (rx = ~tx), for covo's kernel suite (tests/kernel). spidev is bound
 * to spi0.0 from user space through driver_override, giving /dev/spidev0.0.
 *
 * What the controller clocked out is visible in debugfs, independently of spidev:
 *   /sys/kernel/debug/covo_spi_loop/tx_bytes   bytes clocked out so far
 *   /sys/kernel/debug/covo_spi_loop/last_tx    the last transfer's MOSI bytes (binary)
 */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/spi/spi.h>
#include <linux/debugfs.h>

#define LAST_MAX 256

static struct platform_device *pdev;
static struct spi_controller *ctlr;
static struct spi_device *sdev;
static struct dentry *dbg;
static u32 tx_bytes;
static u8 last_tx[LAST_MAX];
static struct debugfs_blob_wrapper last_blob = { .data = last_tx, .size = 0 };

static int loop_transfer_one(struct spi_controller *c, struct spi_device *spi,
			     struct spi_transfer *t)
{
	const u8 *tx = t->tx_buf;
	u8 *rx = t->rx_buf;
	unsigned int i;

	for (i = 0; i < t->len; i++) {
		u8 b = tx ? tx[i] : 0;

		if (rx)
			rx[i] = ~b;
		if (i < LAST_MAX)
			last_tx[i] = b;
	}
	last_blob.size = min_t(unsigned int, t->len, LAST_MAX);
	tx_bytes += t->len;
	return 0;
}

static int __init loop_init(void)
{
	struct spi_board_info info = {
		.modalias = "covo-loop-dev",
		.max_speed_hz = 10000000,
		.bus_num = 0,
		.chip_select = 0,
		.mode = SPI_MODE_0,
	};
	int ret;

	pdev = platform_device_register_simple("covo-spi-loop", -1, NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	ctlr = spi_alloc_master(&pdev->dev, 0);
	if (!ctlr) {
		ret = -ENOMEM;
		goto err_pdev;
	}
	ctlr->bus_num = 0;
	ctlr->num_chipselect = 1;
	ctlr->mode_bits = SPI_CPOL | SPI_CPHA;
	ctlr->bits_per_word_mask = SPI_BPW_MASK(8);
	ctlr->max_speed_hz = 10000000;
	ctlr->transfer_one = loop_transfer_one;
	ret = spi_register_controller(ctlr);
	if (ret) {
		spi_controller_put(ctlr);
		goto err_pdev;
	}
	sdev = spi_new_device(ctlr, &info);
	if (!sdev) {
		ret = -ENODEV;
		spi_unregister_controller(ctlr);
		goto err_pdev;
	}
	dbg = debugfs_create_dir("covo_spi_loop", NULL);
	debugfs_create_u32("tx_bytes", 0444, dbg, &tx_bytes);
	debugfs_create_blob("last_tx", 0444, dbg, &last_blob);
	return 0;
err_pdev:
	platform_device_unregister(pdev);
	return ret;
}

static void __exit loop_exit(void)
{
	debugfs_remove_recursive(dbg);
	spi_unregister_device(sdev);
	spi_unregister_controller(ctlr);
	platform_device_unregister(pdev);
}

module_init(loop_init);
module_exit(loop_exit);
MODULE_DESCRIPTION("SPI controller answering inverted bytes (covo kernel suite)");
MODULE_LICENSE("GPL");
