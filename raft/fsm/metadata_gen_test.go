package fsm

// randomConfCommand draws a metadata or rename command for the command generator.
func randomConfCommand(c chooser, sess, ch func() string) Command {
	channel := pick(c, []string{"", "", "", ch()})
	switch c.intn(5) {
	case 4:
		return RenameChannel{Session: sess(), Channel: ch(), NewName: pick(c, []string{"#z", "&y", ch()}), Reason: pick(c, genTexts)}
	case 0:
		return ClearMetadata{Session: sess(), Channel: channel}
	default:
		del := c.intn(3) == 0
		value := pick(c, []string{"", "v1", "https://example.com"})
		if del {
			value = ""
		}
		return SetMetadata{Session: sess(), Channel: channel, Key: pick(c, []string{"avatar", "url", "Bad Key", "display-name"}),
			Value: value, Delete: del}
	}
}
